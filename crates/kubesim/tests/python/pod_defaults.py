"""Create a minimal pod and check the defaults the server fills in."""

from kscommon import check, pod, setup

_, core, ns = setup("py-pod")

created = core.create_namespaced_pod(ns, pod("web"))
check(created.metadata.name == "web", "name %r" % created.metadata.name)

got = core.read_namespaced_pod("web", ns)
check(got.metadata.namespace == ns, "namespace %r" % got.metadata.namespace)
check(got.metadata.uid == created.metadata.uid, "uid is stable")
check(got.metadata.creation_timestamp is not None, "creationTimestamp is set")
check(got.spec.scheduler_name == "default-scheduler", "schedulerName %r" % got.spec.scheduler_name)
check(got.spec.restart_policy == "Always", "restartPolicy %r" % got.spec.restart_policy)
check(got.spec.dns_policy == "ClusterFirst", "dnsPolicy %r" % got.spec.dns_policy)
check(
    got.spec.termination_grace_period_seconds == 30,
    "terminationGracePeriodSeconds %r" % got.spec.termination_grace_period_seconds,
)
c = got.spec.containers[0]
check(c.image_pull_policy == "IfNotPresent", "imagePullPolicy %r" % c.image_pull_policy)
check(
    c.termination_message_path == "/dev/termination-log",
    "terminationMessagePath %r" % c.termination_message_path,
)
check(got.spec.priority == 0, "priority %r" % got.spec.priority)
check(
    got.spec.preemption_policy == "PreemptLowerPriority",
    "preemptionPolicy %r" % got.spec.preemption_policy,
)
check(got.status.phase == "Pending", "phase %r" % got.status.phase)
check(got.status.qos_class == "BestEffort", "qosClass %r" % got.status.qos_class)
print("ok")
