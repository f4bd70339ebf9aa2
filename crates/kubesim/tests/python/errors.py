"""Errors surface as ApiException with the right status and a Status body."""

import json

from kubernetes import client
from kubernetes.client.rest import ApiException

from kscommon import check, setup

_, core, ns = setup("py-err")


def expect(status, reason, fn, *args):
    try:
        fn(*args)
    except ApiException as e:
        check(e.status == status, "wanted %d, got %d: %s" % (status, e.status, e.body))
        body = json.loads(e.body)
        check(body.get("kind") == "Status", "error body kind %r" % body.get("kind"))
        check(body.get("status") == "Failure", "error body status %r" % body.get("status"))
        check(body.get("code") == status, "error body code %r" % body.get("code"))
        check(body.get("reason") == reason, "error body reason %r, wanted %r" % (body.get("reason"), reason))
        return body
    raise AssertionError("expected HTTP %d from %s" % (status, fn.__name__))


body = expect(404, "NotFound", core.read_namespaced_config_map, "missing", ns)
check(body.get("details", {}).get("name") == "missing", "404 details %r" % body.get("details"))

cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="dup"), data={"k": "v"})
core.create_namespaced_config_map(ns, cm)
body = expect(409, "AlreadyExists", core.create_namespaced_config_map, ns, cm)
check(body.get("details", {}).get("name") == "dup", "409 details %r" % body.get("details"))

bad = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"}, "spec": {"containers": []}}
body = expect(422, "Invalid", core.create_namespaced_pod, ns, bad)
causes = body.get("details", {}).get("causes") or []
check(
    any("containers" in (c.get("field") or "") for c in causes),
    "422 causes name spec.containers: %r" % causes,
)
expect(404, "NotFound", core.read_namespaced_pod, "bad", ns)

# A field of the wrong JSON type is refused at decoding, as upstream does.
confused = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "confused"},
            "spec": {"containers": [{"name": "c", "image": "i", "env": [1]}]}}
body = expect(400, "BadRequest", core.create_namespaced_pod, ns, confused)
want = ('Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number '
        'into Go struct field Container.spec.containers.env of type v1.EnvVar')
check(body.get("message") == want, "400 message %r" % body.get("message"))
expect(404, "NotFound", core.read_namespaced_pod, "confused", ns)
body = expect(422, "Invalid", core.patch_namespaced_config_map, "dup", ns, {"data": {"k": 1}})
check("patch: Invalid value" in body.get("message", ""), "patch refusal %r" % body.get("message"))
check(core.read_namespaced_config_map("dup", ns).data == {"k": "v"}, "refused patch changed the map")
expect(404, "NotFound", core.delete_namespaced_config_map, "missing", ns)
print("ok")
