"""Patch a deployment with a dict body: the client sends a strategic merge
patch, so containers merge by name instead of the list being replaced."""

from kubernetes import client

from kscommon import check, setup

api_client, _, ns = setup("py-patch")
apps = client.AppsV1Api(api_client)

labels = {"app": "web"}
dep = client.V1Deployment(
    metadata=client.V1ObjectMeta(name="web", labels=labels),
    spec=client.V1DeploymentSpec(
        replicas=1,
        selector=client.V1LabelSelector(match_labels=labels),
        template=client.V1PodTemplateSpec(
            metadata=client.V1ObjectMeta(labels=labels),
            spec=client.V1PodSpec(
                containers=[
                    client.V1Container(
                        name="web",
                        image="nginx:1.25",
                        ports=[client.V1ContainerPort(container_port=80)],
                    ),
                    client.V1Container(name="sidecar", image="busybox:1.36"),
                ]
            ),
        ),
    ),
)
created = apps.create_namespaced_deployment(ns, dep)
gen = created.metadata.generation
rv = created.metadata.resource_version

patch = {
    "metadata": {"labels": {"tier": "backend"}},
    "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.26"}]}}},
}
patched = apps.patch_namespaced_deployment("web", ns, patch)

check(patched.metadata.labels == {"app": "web", "tier": "backend"}, "labels %r" % patched.metadata.labels)
check(patched.metadata.resource_version != rv, "resourceVersion changed")
check(patched.metadata.generation == gen + 1, "generation %r -> %r" % (gen, patched.metadata.generation))
containers = {c.name: c for c in patched.spec.template.spec.containers}
check(sorted(containers) == ["sidecar", "web"], "containers %r" % sorted(containers))
check(containers["web"].image == "nginx:1.26", "web image %r" % containers["web"].image)
check(
    [p.container_port for p in containers["web"].ports or []] == [80],
    "web ports kept: %r" % containers["web"].ports,
)
check(containers["sidecar"].image == "busybox:1.36", "sidecar image %r" % containers["sidecar"].image)

again = apps.read_namespaced_deployment("web", ns)
# The deployment controller may have written the status since: the read
# sees the patch or something newer, never older.
check(
    int(again.metadata.resource_version) >= int(patched.metadata.resource_version),
    "read after patch: %s < %s" % (again.metadata.resource_version, patched.metadata.resource_version),
)
check(again.metadata.generation == patched.metadata.generation, "generation kept")
check(
    [c.image for c in again.spec.template.spec.containers] == ["nginx:1.26", "busybox:1.36"],
    "stored images %r" % [c.image for c in again.spec.template.spec.containers],
)
print("ok")
