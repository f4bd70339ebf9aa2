//! Pod and pod-template defaults.
//!
//! Upstream keeps a deliberate split: `SetDefaults_PodSpec` and container
//! defaults reach every pod spec (templates included), while request
//! defaulting from limits, `enableServiceLinks`, and everything admission
//! adds (service account, token volume, priority, tolerations) and the
//! initial status only reach real Pods. Templates in a real cluster's
//! Deployments lack those fields, so they must lack them here too.

use serde_json::{json, Map, Value};

use super::{absent, child_obj, each_obj, existing_obj, set_default, Context};
use crate::validation::qty;

/// Where the service-account token is mounted in every container.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// Prefix of the projected token volume's name.
pub const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";
/// Set on static pods mirrored from a kubelet; admission leaves them alone.
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

const CONTAINER_LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

/// The scheme defaults of a Pod object (what decoding fills in, before
/// the field manager records the writer's fields).
pub fn default_pod(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    if let Some(spec) = child_obj(root, "spec") {
        default_pod_spec(spec);
        default_requests_from_limits(spec);
        set_default(spec, "enableServiceLinks", true);
    }
}

/// What admission and the create strategy add to a Pod after the field
/// manager has run, so no manager owns them: the service account token
/// volume, the priority, the default tolerations, and the initial status.
pub fn admit_pod(obj: &mut Value, ctx: &mut Context<'_>) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let mirror = root
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(MIRROR_ANNOTATION))
        .is_some();
    if let Some(spec) = child_obj(root, "spec") {
        if !mirror {
            service_account(spec, ctx);
        }
        default_priority(spec);
        default_tolerations(spec);
    }
    default_status(root);
}

/// Defaults for a `PodTemplateSpec` (Deployments, Jobs, ...).
pub fn default_template(template: &mut Value) {
    if let Some(t) = template.as_object_mut() {
        if let Some(spec) = child_obj(t, "spec") {
            default_pod_spec(spec);
        }
    }
}

/// `SetDefaults_PodSpec` plus the container, volume and probe defaults
/// that reach every pod spec.
pub fn default_pod_spec(spec: &mut Map<String, Value>) {
    set_default(spec, "dnsPolicy", "ClusterFirst");
    set_default(spec, "restartPolicy", "Always");
    set_default(spec, "securityContext", Map::new());
    set_default(spec, "terminationGracePeriodSeconds", 30);
    set_default(spec, "schedulerName", "default-scheduler");
    // The deprecated `serviceAccount` mirrors `serviceAccountName` in v1,
    // and fills it when only the old field was sent.
    if absent(spec, "serviceAccountName") || spec.get("serviceAccountName") == Some(&json!("")) {
        if let Some(old) = spec
            .get("serviceAccount")
            .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
        {
            let old = old.clone();
            spec.insert("serviceAccountName".into(), old);
        }
    }
    if let Some(name) = spec
        .get("serviceAccountName")
        .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
        .cloned()
    {
        spec.insert("serviceAccount".into(), name);
    }
    for list in CONTAINER_LISTS {
        for c in each_obj(spec, list) {
            default_container(c);
        }
    }
    for v in each_obj(spec, "volumes") {
        default_volume(v);
    }
}

fn default_container(c: &mut Map<String, Value>) {
    if absent(c, "imagePullPolicy") {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        c.insert("imagePullPolicy".into(), pull_policy(image).into());
    }
    set_default(c, "terminationMessagePath", "/dev/termination-log");
    set_default(c, "terminationMessagePolicy", "File");
    set_default(c, "resources", Map::new());
    for p in each_obj(c, "ports") {
        set_default(p, "protocol", "TCP");
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = existing_obj(c, probe) {
            set_default(p, "timeoutSeconds", 1);
            set_default(p, "periodSeconds", 10);
            set_default(p, "successThreshold", 1);
            set_default(p, "failureThreshold", 3);
            default_handler(p);
        }
    }
    if let Some(lc) = existing_obj(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = existing_obj(lc, hook) {
                default_handler(h);
            }
        }
    }
    for e in each_obj(c, "env") {
        if let Some(fr) = existing_obj(e, "valueFrom").and_then(|vf| existing_obj(vf, "fieldRef")) {
            set_default(fr, "apiVersion", "v1");
        }
    }
}

fn default_handler(h: &mut Map<String, Value>) {
    if let Some(g) = existing_obj(h, "httpGet") {
        set_default(g, "path", "/");
        set_default(g, "scheme", "HTTP");
    }
}

/// Always for `:latest` or an untagged name, IfNotPresent otherwise;
/// a digest pins the image, so it is IfNotPresent unless tagged latest.
pub fn pull_policy(image: &str) -> &'static str {
    match image_tag(image) {
        Some("latest") => "Always",
        _ => "IfNotPresent",
    }
}

/// The tag a reference resolves to: `Some("latest")` when untagged and
/// undigested, `None` when digested only or not a valid reference (the
/// cases upstream's parser answers with an empty tag).
fn image_tag(image: &str) -> Option<&str> {
    if image.is_empty() || image.chars().any(char::is_whitespace) {
        return None;
    }
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    // A colon after the last slash separates the tag; one before it is a
    // registry port.
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (repo, tag) = match name[last_slash..].rfind(':') {
        Some(i) => (&name[..last_slash + i], Some(&name[last_slash + i + 1..])),
        None => (name, None),
    };
    if repo.is_empty() || !path_is_lowercase(repo) || tag == Some("") {
        return None;
    }
    match (tag, digest) {
        (Some(t), _) => Some(t),
        (None, Some(_)) => None,
        (None, None) => Some("latest"),
    }
}

/// Repository paths (everything after a registry host) must be lower case.
fn path_is_lowercase(repo: &str) -> bool {
    let path = match repo.split_once('/') {
        Some((host, rest)) if host.contains('.') || host.contains(':') || host == "localhost" => {
            rest
        }
        _ => repo,
    };
    !path.chars().any(|c| c.is_ascii_uppercase())
}

fn default_volume(v: &mut Map<String, Value>) {
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = existing_obj(v, source) {
            set_default(s, "defaultMode", 420);
            if source == "downwardAPI" {
                default_field_refs(s);
            }
            if source == "projected" {
                for src in each_obj(s, "sources") {
                    if let Some(d) = existing_obj(src, "downwardAPI") {
                        default_field_refs(d);
                    }
                }
            }
        }
    }
    if let Some(hp) = existing_obj(v, "hostPath") {
        set_default(hp, "type", "");
    }
}

fn default_field_refs(d: &mut Map<String, Value>) {
    for item in each_obj(d, "items") {
        if let Some(fr) = existing_obj(item, "fieldRef") {
            set_default(fr, "apiVersion", "v1");
        }
    }
}

/// Limits imply requests when requests are not given (Pods only).
fn default_requests_from_limits(spec: &mut Map<String, Value>) {
    for list in ["initContainers", "containers"] {
        for c in each_obj(spec, list) {
            let Some(res) = existing_obj(c, "resources") else {
                continue;
            };
            let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else {
                continue;
            };
            let Some(requests) = child_obj(res, "requests") else {
                continue;
            };
            for (k, v) in limits {
                requests.entry(k).or_insert(v);
            }
        }
    }
}

/// The ServiceAccount admission plugin: name the account and mount its
/// token into every container.
fn service_account(spec: &mut Map<String, Value>, ctx: &mut Context<'_>) {
    let named = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    if !named {
        spec.insert("serviceAccountName".into(), "default".into());
        spec.insert("serviceAccount".into(), "default".into());
    }
    if spec.get("automountServiceAccountToken") == Some(&Value::Bool(false)) {
        return;
    }
    let needs_mount = |c: &Value| {
        !c.get("volumeMounts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH))
    };
    let needed = ["initContainers", "containers"].iter().any(|list| {
        spec.get(*list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c.is_object() && needs_mount(c))
    });
    if !needed {
        return;
    }
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .find(|n| n.starts_with(TOKEN_VOLUME_PREFIX))
        .map(str::to_string);
    // Draw from the server's RNG only when a new volume is really needed,
    // so seeded runs stay reproducible.
    let volume_name = match &existing {
        Some(n) => n.clone(),
        None => format!("{TOKEN_VOLUME_PREFIX}{}", (ctx.random_suffix)()),
    };
    let mount = json!({"mountPath": TOKEN_MOUNT_PATH, "name": volume_name, "readOnly": true});
    for list in ["initContainers", "containers"] {
        let Some(Value::Array(items)) = spec.get_mut(list) else {
            continue;
        };
        for c in items.iter_mut().filter(|c| c.is_object() && needs_mount(c)) {
            let Some(c) = c.as_object_mut() else { continue };
            if absent(c, "volumeMounts") {
                c.insert("volumeMounts".into(), Value::Array(Vec::new()));
            }
            if let Some(Value::Array(mounts)) = c.get_mut("volumeMounts") {
                mounts.push(mount.clone());
            }
        }
    }
    if existing.is_none() {
        if absent(spec, "volumes") {
            spec.insert("volumes".into(), Value::Array(Vec::new()));
        }
        if let Some(Value::Array(vols)) = spec.get_mut("volumes") {
            vols.push(token_volume(&volume_name));
        }
    }
}

/// The projected volume holding the bound token, the cluster CA and the
/// namespace, exactly as a real cluster writes it.
pub fn token_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ],
            "defaultMode": 420
        }
    })
}

/// The Priority admission plugin's preemption policy for a pod without a
/// named class. The priority itself is left to the server, which knows
/// the classes: a global default class gives its value, and a priority
/// set here would read as one the client gave, which admission refuses
/// when it differs (see [`resolve_priority`]).
fn default_priority(spec: &mut Map<String, Value>) {
    let named = spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    if !named {
        set_default(spec, "preemptionPolicy", "PreemptLowerPriority");
    }
}

/// Sets a pod's priority from its resolved PriorityClass, as the Priority
/// admission plugin does; an explicit preemptionPolicy is kept.
pub fn resolve_priority(pod: &mut Value, value: i64, preemption_policy: &str) {
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("priority".into(), value.into());
        let policy = if preemption_policy.is_empty() {
            "PreemptLowerPriority"
        } else {
            preemption_policy
        };
        set_default(spec, "preemptionPolicy", policy);
    }
}

/// The DefaultTolerationSeconds admission plugin: pods ride out a node's
/// not-ready or unreachable taint for five minutes unless they already
/// say otherwise.
fn default_tolerations(spec: &mut Map<String, Value>) {
    const TAINTS: [&str; 2] = [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ];
    if !absent(spec, "tolerations") && !spec.get("tolerations").is_some_and(Value::is_array) {
        return;
    }
    let existing: Vec<Value> = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let tolerated = |taint: &str| {
        existing.iter().any(|t| {
            let key = t.get("key").and_then(Value::as_str).unwrap_or("");
            let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
            (key == taint || key.is_empty()) && (effect == "NoExecute" || effect.is_empty())
        })
    };
    let missing: Vec<&str> = TAINTS.into_iter().filter(|t| !tolerated(t)).collect();
    if missing.is_empty() {
        return;
    }
    let mut list = existing;
    for key in missing {
        list.push(json!({
            "key": key,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300
        }));
    }
    spec.insert("tolerations".into(), Value::Array(list));
}

/// A new pod starts Pending with its QoS class fixed.
fn default_status(root: &mut Map<String, Value>) {
    let qos = qos_class(root.get("spec").unwrap_or(&Value::Null));
    if !root.get("status").is_some_and(Value::is_object) {
        root.insert("status".into(), Value::Object(Map::new()));
    }
    if let Some(status) = existing_obj(root, "status") {
        set_default(status, "phase", "Pending");
        set_default(status, "qosClass", qos);
    }
}

/// Upstream's `ComputePodQOS`: only cpu and memory count, zero quantities
/// are ignored, and Guaranteed needs both limits on every container with
/// requests equal to limits.
pub fn qos_class(spec: &Value) -> &'static str {
    let mut requests: Vec<(String, qty::Nano)> = Vec::new();
    let mut limits: Vec<(String, qty::Nano)> = Vec::new();
    let mut guaranteed = true;
    let add = |acc: &mut Vec<(String, qty::Nano)>, k: &str, q: qty::Nano| match acc
        .iter_mut()
        .find(|(n, _)| n == k)
    {
        Some((_, sum)) => *sum = sum.saturating_add(q),
        None => acc.push((k.to_string(), q)),
    };
    for list in ["containers", "initContainers"] {
        let containers = spec
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for c in containers {
            let res = c.get("resources");
            let positive = |which: &str| -> Vec<(String, qty::Nano)> {
                res.and_then(|r| r.get(which))
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| *k == "cpu" || *k == "memory")
                    .filter_map(|(k, v)| {
                        let text = match v {
                            Value::String(s) => s.clone(),
                            Value::Number(n) => n.to_string(),
                            _ => return None,
                        };
                        qty::parse(&text)
                            .filter(|q| q.0 > 0)
                            .map(|q| (k.clone(), q))
                    })
                    .collect()
            };
            for (k, q) in positive("requests") {
                add(&mut requests, &k, q);
            }
            let lims = positive("limits");
            let has = |n: &str| lims.iter().any(|(k, _)| k == n);
            if !(has("cpu") && has("memory")) {
                guaranteed = false;
            }
            for (k, q) in lims {
                add(&mut limits, &k, q);
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed {
        guaranteed = requests
            .iter()
            .all(|(k, q)| limits.iter().any(|(lk, lq)| lk == k && lq == q));
    }
    if guaranteed && requests.len() == limits.len() {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_policies() {
        assert_eq!(pull_policy("nginx"), "Always");
        assert_eq!(pull_policy("nginx:latest"), "Always");
        assert_eq!(pull_policy("nginx:1.27"), "IfNotPresent");
        assert_eq!(pull_policy("localhost:5000/nginx"), "Always");
        assert_eq!(pull_policy("localhost:5000/nginx:v1"), "IfNotPresent");
        assert_eq!(pull_policy("nginx@sha256:abcd"), "IfNotPresent");
        assert_eq!(pull_policy("nginx:latest@sha256:abcd"), "Always");
        assert_eq!(pull_policy("Nginx"), "IfNotPresent");
        assert_eq!(pull_policy("Registry.Example.com/nginx"), "Always");
        assert_eq!(pull_policy(""), "IfNotPresent");
    }

    #[test]
    fn qos_classes() {
        let c = |res: Value| json!({"containers": [{"resources": res}]});
        assert_eq!(qos_class(&c(json!({}))), "BestEffort");
        assert_eq!(
            qos_class(&c(json!({"requests": {"cpu": "0"}}))),
            "BestEffort"
        );
        assert_eq!(
            qos_class(&c(json!({"requests": {"cpu": "100m"}}))),
            "Burstable"
        );
        assert_eq!(
            qos_class(&c(json!({"limits": {"cpu": "1", "memory": "1Gi"},
                                 "requests": {"cpu": "1000m", "memory": "1Gi"}}))),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(&c(json!({"limits": {"cpu": "1", "memory": "1Gi"},
                                 "requests": {"cpu": "500m", "memory": "1Gi"}}))),
            "Burstable"
        );
        assert_eq!(
            qos_class(&c(
                json!({"limits": {"cpu": "1"}, "requests": {"cpu": "1"}})
            )),
            "Burstable"
        );
        // Non-QoS resources do not count.
        assert_eq!(
            qos_class(&c(json!({"requests": {"nvidia.com/gpu": "1"}}))),
            "BestEffort"
        );
    }
}
