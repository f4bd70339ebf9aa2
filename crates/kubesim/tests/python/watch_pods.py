"""Watch pods from a list's resourceVersion while creating two and deleting
one; the stream must carry ADDED, ADDED, DELETED for them, in order."""

import threading

from kubernetes import watch

from kscommon import check, pod, setup

_, core, ns = setup("py-watch")

listed = core.list_namespaced_pod(ns)
rv = listed.metadata.resource_version
check(rv, "list has a resourceVersion")

events = []
errors = []
done = threading.Event()


def run():
    w = watch.Watch()
    try:
        for ev in w.stream(core.list_namespaced_pod, ns, resource_version=rv, timeout_seconds=5):
            events.append((ev["type"], ev["object"].metadata.name, ev["object"].metadata.resource_version))
            seen = [(t, n) for t, n, _ in events if t in ("ADDED", "DELETED")]
            if len(seen) >= 3:
                w.stop()
    except Exception as e:  # reported by the main thread
        errors.append(repr(e))
    finally:
        done.set()


t = threading.Thread(target=run, daemon=True)
t.start()

a = core.create_namespaced_pod(ns, pod("watch-a"))
b = core.create_namespaced_pod(ns, pod("watch-b"))
core.delete_namespaced_pod("watch-a", ns)

check(done.wait(30), "watch did not finish; events so far: %r" % events)
check(not errors, "watch failed: %r" % errors)
seen = [(t, n) for t, n, _ in events if t in ("ADDED", "DELETED")]
check(
    seen == [("ADDED", "watch-a"), ("ADDED", "watch-b"), ("DELETED", "watch-a")],
    "events %r" % events,
)
check(
    events[0][2] == a.metadata.resource_version,
    "ADDED watch-a carries the create's resourceVersion: %r vs %r" % (events[0], a.metadata.resource_version),
)
added_b = [e for e in events if e[:2] == ("ADDED", "watch-b")][0]
check(added_b[2] == b.metadata.resource_version, "ADDED watch-b rv %r vs %r" % (added_b, b.metadata.resource_version))
left = sorted(p.metadata.name for p in core.list_namespaced_pod(ns).items)
check(left == ["watch-b"], "pods left %r" % left)
print("ok")
