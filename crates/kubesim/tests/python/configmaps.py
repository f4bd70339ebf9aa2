"""Create labelled configmaps and list them with a label selector."""

from kubernetes import client

from kscommon import check, setup

_, core, ns = setup("py-cm")

for name, tier in [("alpha", "front"), ("beta", "back"), ("gamma", "front")]:
    created = core.create_namespaced_config_map(
        ns,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=name, labels={"app": "shop", "tier": tier}),
            data={"name": name},
        ),
    )
    check(created.metadata.name == name, "created name %r" % created.metadata.name)
    check(created.metadata.resource_version, "created object has a resourceVersion")
    check(created.metadata.uid, "created object has a uid")

front = core.list_namespaced_config_map(ns, label_selector="tier=front")
names = sorted(i.metadata.name for i in front.items)
check(names == ["alpha", "gamma"], "tier=front selected %r" % names)
check(front.metadata.resource_version, "list has a resourceVersion")

shop = core.list_namespaced_config_map(ns, label_selector="app=shop,tier!=front")
names = sorted(i.metadata.name for i in shop.items)
check(names == ["beta"], "app=shop,tier!=front selected %r" % names)

in_set = core.list_namespaced_config_map(ns, label_selector="tier in (front,back)")
names = sorted(i.metadata.name for i in in_set.items)
check(names == ["alpha", "beta", "gamma"], "tier in (front,back) selected %r" % names)

none = core.list_namespaced_config_map(ns, label_selector="app=other")
check(none.items == [], "app=other selected %r" % [i.metadata.name for i in none.items])

one = core.read_namespaced_config_map("beta", ns)
check(one.data == {"name": "beta"}, "beta data %r" % one.data)
check(one.metadata.labels == {"app": "shop", "tier": "back"}, "beta labels %r" % one.metadata.labels)
print("ok")
