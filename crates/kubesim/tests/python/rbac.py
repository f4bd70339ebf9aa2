"""Real ServiceAccount tokens through the Python client: forbidden and
permitted operations, impersonation, and truthful review answers."""

import json

from kubernetes import client
from kubernetes.client.rest import ApiException

from kscommon import check, setup

admin_client, core, ns = setup("py-rbac")
rbac = client.RbacAuthorizationV1Api(admin_client)
authz = client.AuthorizationV1Api(admin_client)
bot = "system:serviceaccount:%s:bot" % ns
# The RBAC subject's class was renamed in later clients.
Subject = getattr(client, "RbacV1Subject", None) or getattr(client, "V1Subject")

core.create_namespaced_service_account(ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="bot")))
req = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))
token = core.create_namespaced_service_account_token("bot", ns, req).status.token


def as_token(tok, headers=None):
    cfg = client.Configuration()
    cfg.host = admin_client.configuration.host
    cfg.api_key = {"authorization": "Bearer " + tok}
    c = client.ApiClient(cfg)
    for k, v in (headers or {}).items():
        c.set_default_header(k, v)
    return c


def refused(status, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except ApiException as e:
        check(e.status == status, "wanted %d, got %d: %s" % (status, e.status, e.body))
        return json.loads(e.body)
    raise AssertionError("expected HTTP %d from %s" % (status, fn.__name__))


botc = as_token(token)
bot_core = client.CoreV1Api(botc)
body = refused(403, bot_core.list_namespaced_secret, ns)
check(body["reason"] == "Forbidden", body)
want = 'secrets is forbidden: User "%s" cannot list resource "secrets" in API group "" in the namespace "%s"' % (bot, ns)
check(body["message"] == want, body["message"])
check(body["details"]["kind"] == "secrets", body)
refused(403, bot_core.delete_namespaced_pod, "p", ns)
refused(401, client.CoreV1Api(as_token(token + "x")).list_namespaced_pod, ns)


def self_review(c, verb, resource):
    r = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
        resource_attributes=client.V1ResourceAttributes(namespace=ns, verb=verb, resource=resource)))
    return client.AuthorizationV1Api(c).create_self_subject_access_review(r).status


check(not self_review(botc, "list", "pods").allowed, "bot may list pods before any binding")

rbac.create_namespaced_role_binding(ns, client.V1RoleBinding(
    metadata=client.V1ObjectMeta(name="bot-view"),
    role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="view"),
    subjects=[Subject(kind="ServiceAccount", name="bot", namespace=ns)]))

pods = bot_core.list_namespaced_pod(ns)
check(pods.items == [], "an empty namespace")
st = self_review(botc, "list", "pods")
check(st.allowed, "bot may list pods once bound to view")
check(st.reason == 'RBAC: allowed by RoleBinding "bot-view/%s" of ClusterRole "view" to ServiceAccount "bot/%s"' % (ns, ns), st.reason)
check(not self_review(botc, "delete", "pods").allowed, "view does not delete")
refused(403, bot_core.list_namespaced_secret, ns)

sar = authz.create_subject_access_review(client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
    user=bot, groups=["system:serviceaccounts", "system:authenticated"],
    resource_attributes=client.V1ResourceAttributes(namespace=ns, verb="get", resource="pods"))))
check(sar.status.allowed, "the admin's review about bot")

rules = client.AuthorizationV1Api(botc).create_self_subject_rules_review(
    client.V1SelfSubjectRulesReview(spec=client.V1SelfSubjectRulesReviewSpec(namespace=ns))).status
check(any("pods" in (r.resources or []) and "list" in r.verbs for r in rules.resource_rules), rules)
check(not any("*" in (r.resources or []) for r in rules.resource_rules), rules)

# bot may not impersonate; the admin may.
body = refused(403, client.CoreV1Api(as_token(token, {"Impersonate-User": "alice"})).list_namespaced_pod, ns)
check('cannot impersonate resource "users"' in body["message"], body["message"])
admin_as_bot = client.ApiClient(admin_client.configuration)
admin_as_bot.set_default_header("Impersonate-User", bot)
refused(403, client.CoreV1Api(admin_as_bot).list_namespaced_secret, ns)

print("ok")
