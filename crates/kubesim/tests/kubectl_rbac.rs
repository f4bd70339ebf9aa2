//! End-to-end: who may do what, through the real `kubectl` with real
//! ServiceAccount tokens against `kubesim up --tls` (kubectl sends no
//! tokens over plain HTTP, which acts as the admin). The admin's
//! kubeconfig carries the cluster's token; the others are authenticated
//! and authorized as on a real cluster.

mod common;

use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use common::kubectl::Cluster;

/// `kubectl` with a bearer token instead of the admin.
fn as_token(c: &Cluster, token: &str, args: &[&str]) -> std::process::Output {
    let mut a = vec!["--token", token];
    a.extend_from_slice(args);
    c.kubectl(&a)
}

/// Arguments written as one line.
fn w(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn forbidden(c: &Cluster, token: &str, args: &[&str]) -> String {
    let o = as_token(c, token, args);
    assert!(
        !o.status.success(),
        "kubectl {args:?} was allowed: {}",
        stdout(&o)
    );
    let e = stderr(&o);
    assert!(e.contains("forbidden"), "kubectl {args:?}: {e}");
    e
}

fn allowed(c: &Cluster, token: &str, args: &[&str]) -> String {
    let o = as_token(c, token, args);
    assert!(
        o.status.success(),
        "kubectl {args:?} was refused: {}",
        stderr(&o)
    );
    stdout(&o)
}

fn can_i(c: &Cluster, args: &[&str]) -> String {
    // `can-i` exits 1 for "no".
    stdout(&c.kubectl(&[&["auth", "can-i"], args].concat()))
        .trim()
        .to_string()
}

#[test]
fn tokens_are_held_to_their_bindings() {
    let c = Cluster::start_with("kubectl-rbac", &["--tls"]);
    c.ok(&w("create namespace team"));
    c.ok(&w("create serviceaccount bot -n team"));
    let bot = "system:serviceaccount:team:bot";
    let token = c.ok(&w("create token bot -n team"));
    let t = token.trim();

    // No binding: only the basics every authenticated user has.
    assert_eq!(
        allowed(
            &c,
            t,
            &w("auth whoami -o jsonpath={.status.userInfo.username}")
        ),
        bot
    );
    let e = forbidden(&c, t, &w("get secrets -A"));
    assert!(
        e.contains(&format!(
            "secrets is forbidden: User \"{bot}\" cannot list resource \"secrets\" in API group \"\" at the cluster scope"
        )),
        "{e}"
    );
    forbidden(&c, t, &w("get pods -n team"));
    forbidden(&c, t, &w("delete node n1"));
    assert_eq!(can_i(&c, &["delete", "nodes", "--as", bot]), "no");
    assert_eq!(can_i(&c, &["list", "secrets", "-A", "--as", bot]), "no");
    assert_eq!(
        can_i(&c, &["create", "selfsubjectaccessreviews", "--as", bot]),
        "yes"
    );
    assert_eq!(can_i(&c, &["get", "/version", "--as", bot]), "yes");
    assert_eq!(can_i(&c, &["get", "/metrics", "--as", bot]), "no");

    // edit in one namespace: workloads there, nothing elsewhere.
    c.ok(&w(
        "create rolebinding bot-edit --clusterrole edit --serviceaccount team:bot -n team",
    ));
    allowed(&c, t, &w("create deployment web --image nginx -n team"));
    allowed(&c, t, &w("get secrets -n team"));
    forbidden(&c, t, &w("create deployment web --image nginx -n default"));
    assert_eq!(
        can_i(
            &c,
            &["create", "deployments.apps", "-n", "team", "--as", bot]
        ),
        "yes"
    );
    assert_eq!(
        can_i(
            &c,
            &["create", "deployments.apps", "-n", "default", "--as", bot]
        ),
        "no"
    );
    let list = allowed(&c, t, &w("auth can-i --list -n team"));
    assert!(
        list.lines().any(|l| l.starts_with("deployments.apps ")),
        "{list}"
    );
    assert!(!list.lines().any(|l| l.starts_with("*.*")), "{list}");

    // edit may not write roles; admin may, but only with rules it holds.
    forbidden(
        &c,
        t,
        &w("create role r --verb get --resource pods -n team"),
    );
    c.ok(&w(
        "create rolebinding bot-admin --clusterrole admin --serviceaccount team:bot -n team",
    ));
    allowed(
        &c,
        t,
        &w("create role pod-reader --verb get --resource pods -n team"),
    );
    let e = forbidden(
        &c,
        t,
        &w("create role node-reader --verb get --resource nodes -n team"),
    );
    assert!(
        e.contains("is attempting to grant RBAC permissions not currently held"),
        "{e}"
    );
    assert!(e.contains("Resources:[\"nodes\"]"), "{e}");
    let e = forbidden(
        &c,
        t,
        &w("create rolebinding root --clusterrole cluster-admin --user mallory -n team"),
    );
    assert!(e.contains("not currently held"), "{e}");
    // ...unless it may `bind` that very role.
    c.ok(&w("create clusterrole bind-admin --verb bind --resource clusterroles --resource-name cluster-admin"));
    c.ok(&w(
        "create clusterrolebinding bot-bind --clusterrole bind-admin --serviceaccount team:bot",
    ));
    allowed(
        &c,
        t,
        &w("create rolebinding root --clusterrole cluster-admin --user mallory -n team"),
    );

    // Impersonation needs the impersonate verb on what is impersonated.
    // (whoami prints a message of its own; a list shows the server's.)
    let e = forbidden(&c, t, &w("get configmaps --as alice"));
    assert!(
        e.contains(&format!("users \"alice\" is forbidden: User \"{bot}\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope")),
        "{e}"
    );
    c.ok(&w(
        "create clusterrole be-alice --verb impersonate --resource users --resource-name alice",
    ));
    c.ok(&w(
        "create clusterrolebinding bot-be-alice --clusterrole be-alice --serviceaccount team:bot",
    ));
    let who = allowed(&c, t, &w("auth whoami --as alice -o json"));
    let who: serde_json::Value = serde_json::from_str(&who).unwrap();
    assert_eq!(who["status"]["userInfo"]["username"], "alice");
    assert_eq!(
        who["status"]["userInfo"]["groups"][0],
        "system:authenticated"
    );
    forbidden(&c, t, &w("get configmaps --as bob"));
    let e = forbidden(
        &c,
        t,
        &w("get configmaps --as alice --as-group system:masters"),
    );
    assert!(e.contains("cannot impersonate resource \"groups\""), "{e}");
}

#[test]
fn legacy_and_bound_tokens() {
    let c = Cluster::start_with("kubectl-rbac-tokens", &["--tls"]);
    c.ok(&w("create serviceaccount old"));
    c.apply(
        r#"{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": "old-token", "annotations": {"kubernetes.io/service-account.name": "old"}}}"#,
    );
    let data = c.json(&w("get secret old-token"))["data"].clone();
    let legacy = String::from_utf8(
        STANDARD
            .decode(data["token"].as_str().expect("token filled in"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(
            STANDARD
                .decode(data["namespace"].as_str().unwrap())
                .unwrap()
        )
        .unwrap(),
        "default"
    );
    assert_eq!(
        allowed(
            &c,
            &legacy,
            &w("auth whoami -o jsonpath={.status.userInfo.username}")
        ),
        "system:serviceaccount:default:old"
    );
    // Valid while the Secret holds it.
    c.ok(&w("delete secret old-token"));
    let o = as_token(&c, &legacy, &["auth", "whoami"]);
    assert!(!o.status.success(), "a deleted legacy token was accepted");
    assert!(stderr(&o).contains("Unauthorized"), "{}", stderr(&o));

    // A token bound to a pod dies with the pod.
    c.apply(r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"serviceAccountName": "old", "containers": [{"name": "c", "image": "x"}]}}"#);
    let bound = c.ok(&w(
        "create token old --bound-object-kind Pod --bound-object-name p",
    ));
    let who = allowed(&c, bound.trim(), &w("auth whoami -o json"));
    let who: serde_json::Value = serde_json::from_str(&who).unwrap();
    assert_eq!(
        who["status"]["userInfo"]["extra"]["authentication.kubernetes.io/pod-name"][0],
        "p"
    );
    c.ok(&w("delete pod p --grace-period 0 --force"));
    c.eventually("the pod is gone", 100, Duration::from_millis(100), || {
        (!c.kubectl(&w("get pod p")).status.success()).then_some(())
    });
    let o = as_token(&c, bound.trim(), &["auth", "whoami"]);
    assert!(
        !o.status.success(),
        "a token bound to a deleted pod was accepted"
    );

    // A token for another audience is not for the API server.
    let other = c.ok(&w("create token old --audience vault"));
    assert!(!as_token(&c, other.trim(), &["auth", "whoami"])
        .status
        .success());
}

#[test]
fn aggregated_roles_follow_their_sources() {
    let c = Cluster::start_with("kubectl-rbac-aggregation", &["--tls"]);
    c.apply(
        r#"{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "classes-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
            "rules": [{"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["get", "list"]}]}"#,
    );
    // view picks it up, and edit and admin through view.
    for role in ["view", "edit", "admin"] {
        c.until(&["get", "clusterrole", role, "-o", "json"], |out| {
            out.contains("\"priorityclasses\"")
        });
    }
    assert_eq!(
        can_i(
            &c,
            &w("list priorityclasses.scheduling.k8s.io --as u --as-group viewers")
        ),
        "no"
    );
    c.ok(&w(
        "create clusterrolebinding viewers --clusterrole view --group viewers",
    ));
    assert_eq!(
        can_i(
            &c,
            &w("list priorityclasses.scheduling.k8s.io --as u --as-group viewers")
        ),
        "yes"
    );
    assert_eq!(
        can_i(
            &c,
            &w("delete priorityclasses.scheduling.k8s.io --as u --as-group viewers")
        ),
        "no"
    );
    c.ok(&w("delete clusterrole classes-view"));
    c.until(&w("get clusterrole view -o json"), |out| {
        !out.contains("\"priorityclasses\"")
    });
}

/// The built-in controllers act as their own ServiceAccounts, each held to
/// its `system:controller:*` role, and still do their work with RBAC on.
#[test]
fn controllers_run_as_their_own_service_accounts() {
    let c = Cluster::start_with("kubectl-rbac-controllers", &["--tls", "--nodes", "2"]);
    let denied = "in-process request forbidden";

    // A Deployment rolls out (deployment and replicaset controllers, the
    // scheduler, the kubelets), and deleting it takes its ReplicaSet and
    // pods with it (the garbage collector).
    c.ok(&w("create namespace shop"));
    c.ok(&w(
        "create deployment web --image=nginx --replicas=2 -n shop",
    ));
    c.ok(&w("rollout status deployment/web -n shop --timeout=90s"));
    assert_eq!(
        c.names(&w("get pods -n shop --field-selector=status.phase=Running"))
            .len(),
        2
    );
    c.ok(&w("delete deployment web -n shop"));
    c.wait_for("the ReplicaSet and pods to be collected", || {
        c.json(&w("get replicasets,pods -n shop"))["items"]
            .as_array()
            .is_some_and(|l| l.is_empty())
    });

    // Deleting a namespace empties it and removes it (namespace controller).
    c.ok(&w("create configmap settings -n shop"));
    c.ok(&w("delete namespace shop --wait=false"));
    c.wait_for("the namespace to go", || {
        !c.kubectl(&w("get namespace shop")).status.success()
    });
    assert!(!c.server.log().contains(denied), "{}", c.server.log());

    // Each identity holds its role and nothing beyond it.
    let rs = "system:serviceaccount:kube-system:replicaset-controller";
    assert_eq!(can_i(&c, &["create", "pods", "--as", rs]), "yes");
    assert_eq!(can_i(&c, &["create", "deployments.apps", "--as", rs]), "no");
    let e = stderr(&c.kubectl(&["create", "secret", "generic", "s", "--as", rs]));
    assert!(
        e.contains(&format!(
            "secrets is forbidden: User \"{rs}\" cannot create resource \"secrets\" in API group \"\" in the namespace \"default\""
        )),
        "{e}"
    );

    // The ReplicaSet controller's pods are created as that ServiceAccount:
    // without the rule that lets it, they are not, and the refusal names it.
    c.ok(&w("create deployment api --image=nginx --replicas=1"));
    c.rollout_status("deployment/api");
    let mut role = c.json(&w(
        "get clusterrole system:controller:replicaset-controller",
    ));
    for rule in role["rules"].as_array_mut().expect("rules") {
        if rule["resources"] == serde_json::json!(["pods"]) {
            rule["verbs"] = serde_json::json!(["delete", "list", "patch", "watch"]);
        }
    }
    c.apply_stdin(&["replace", "-f", "-"], &role.to_string());
    c.ok(&w("scale deployment api --replicas=3"));
    c.wait_for("the refusal to be logged", || {
        c.server
            .log()
            .lines()
            .any(|l| l.contains(denied) && l.contains(rs) && l.contains("create"))
    });
    assert_eq!(c.names(&w("get pods -l app=api")).len(), 1);

    // Each controller records its events as itself, under upstream's source
    // component: the Deployment's scaling is the deployment controller's.
    let scaled = c.items(&w("get events --field-selector reason=ScalingReplicaSet"));
    assert!(
        scaled
            .iter()
            .any(|e| e["source"]["component"] == "deployment-controller"),
        "{scaled:?}"
    );
    // Without the rule for events in its role, its next event is refused
    // and the refusal names its ServiceAccount, not the manager's user.
    let dc = "system:serviceaccount:kube-system:deployment-controller";
    let mut role = c.json(&w(
        "get clusterrole system:controller:deployment-controller",
    ));
    role["rules"]
        .as_array_mut()
        .expect("rules")
        .retain(|r| !r["resources"].to_string().contains("events"));
    c.apply_stdin(&["replace", "-f", "-"], &role.to_string());
    c.ok(&w("scale deployment api --replicas=2"));
    c.wait_for("the event's refusal to be logged", || {
        c.server
            .log()
            .lines()
            .any(|l| l.contains(denied) && l.contains(dc) && l.contains("events"))
    });
}

/// The emulated kubelets act as the ServiceAccount
/// kube-system/kubesim-emulator, held to its ClusterRole: they run pods
/// with RBAC on, may do what kwok's controller may and no more, and are
/// refused once their role loses a rule they use.
#[test]
fn the_emulator_runs_as_its_own_service_account() {
    let c = Cluster::start_with("kubectl-rbac-emulator", &["--tls", "--nodes", "2"]);
    let emulator = "system:serviceaccount:kube-system:kubesim-emulator";
    let refused = |verb: &str| {
        c.server.log().lines().any(|l| {
            l.contains("in-process request forbidden") && l.contains(emulator) && l.contains(verb)
        })
    };

    c.ok(&w("create deployment web --image=nginx --replicas=2"));
    c.rollout_status("deployment/web");
    assert_eq!(
        c.names(&w(
            "get pods -l app=web --field-selector=status.phase=Running"
        ))
        .len(),
        2
    );
    assert!(
        !c.server.log().contains(emulator),
        "the emulator was refused: {}",
        c.server.log()
    );

    // Every identity the components act as is an object, as in a cluster
    // whose controllers run with their own credentials.
    let accounts = c.names(&w("get sa -n kube-system"));
    for sa in [
        "default",
        "replicaset-controller",
        "deployment-controller",
        "generic-garbage-collector",
        "kubesim-emulator",
    ] {
        assert!(
            accounts.iter().any(|a| a == sa),
            "{sa} missing: {accounts:?}"
        );
    }

    assert_eq!(can_i(&c, &["delete", "secrets", "--as", emulator]), "no");
    assert_eq!(
        can_i(&c, &["create", "deployments.apps", "--as", emulator]),
        "no"
    );
    assert_eq!(
        can_i(
            &c,
            &["patch", "pods", "--subresource", "status", "--as", emulator]
        ),
        "yes"
    );
    assert_eq!(
        can_i(
            &c,
            &[
                "update",
                "nodes",
                "--subresource",
                "status",
                "--as",
                emulator
            ]
        ),
        "yes"
    );

    // Without the rule on pods/status the kubelets cannot report the new
    // pods: they are refused, by name, and the pods are not Running.
    let mut role = c.json(&w("get clusterrole kubesim-emulator"));
    role["rules"]
        .as_array_mut()
        .expect("rules")
        .retain(|r| r["resources"] != serde_json::json!(["pods/status"]));
    c.apply_stdin(&["replace", "-f", "-"], &role.to_string());
    c.ok(&w("scale deployment web --replicas=3"));
    c.wait_for("the emulator's refusal to be logged", || refused("patch"));
    assert_eq!(
        c.names(&w(
            "get pods -l app=web --field-selector=status.phase=Running"
        ))
        .len(),
        2
    );
}

/// A kubeconfig for `system:node:<node>` in `system:nodes`, with a client
/// certificate signed by the cluster's CA (as a kubelet's would be).
fn node_kubeconfig(c: &Cluster, node: &str) -> std::path::PathBuf {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let pki = c.dir.join("pki");
    let ca_key = KeyPair::from_pem(&std::fs::read_to_string(pki.join("ca.key")).unwrap()).unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name.push(DnType::CommonName, "kubesim-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let issuer = Issuer::new(ca, ca_key);
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name
        .push(DnType::CommonName, format!("system:node:{node}"));
    p.distinguished_name
        .push(DnType::OrganizationName, "system:nodes");
    p.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().unwrap();
    let cert = p.signed_by(&key, &issuer).unwrap();
    let admin = std::fs::read_to_string(pki.join("admin.kubeconfig")).unwrap();
    let text: Vec<String> = admin
        .lines()
        .map(|l| {
            let indent = &l[..l.len() - l.trim_start().len()];
            if l.trim_start().starts_with("client-certificate-data:") {
                format!(
                    "{indent}client-certificate-data: {}",
                    STANDARD.encode(cert.pem())
                )
            } else if l.trim_start().starts_with("client-key-data:") {
                format!(
                    "{indent}client-key-data: {}",
                    STANDARD.encode(key.serialize_pem())
                )
            } else {
                l.to_string()
            }
        })
        .collect();
    let path = c.dir.join(format!("{node}.kubeconfig"));
    std::fs::write(&path, text.join("\n")).unwrap();
    path
}

fn as_node(kc: &std::path::Path, args: &[&str], stdin: Option<&str>) -> std::process::Output {
    use std::io::Write;
    let mut child = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kc)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run kubectl");
    if let Some(s) = stdin {
        child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

fn node_allowed(kc: &std::path::Path, args: &[&str], stdin: Option<&str>) -> String {
    let o = as_node(kc, args, stdin);
    assert!(o.status.success(), "kubectl {args:?}: {}", stderr(&o));
    stdout(&o)
}

fn node_refused(kc: &std::path::Path, args: &[&str], stdin: Option<&str>) -> String {
    let o = as_node(kc, args, stdin);
    assert!(
        !o.status.success(),
        "kubectl {args:?} was allowed: {}",
        stdout(&o)
    );
    stderr(&o)
}

/// A kubelet's certificate is held by the Node authorizer and
/// NodeRestriction to its own node, its own pods and what they use.
#[test]
fn nodes_reach_only_their_own_objects() {
    let c = Cluster::start_with("kubectl-rbac-nodes", &["--tls", "--nodes", "0"]);
    let n1 = node_kubeconfig(&c, "n1");
    let n2 = node_kubeconfig(&c, "n2");
    assert_eq!(
        node_allowed(
            &n1,
            &w("auth whoami -o jsonpath={.status.userInfo.username}"),
            None
        ),
        "system:node:n1"
    );

    // A kubelet registers its own Node, and no other.
    let node = |name: &str| {
        format!(r#"{{"apiVersion": "v1", "kind": "Node", "metadata": {{"name": "{name}"}}}}"#)
    };
    node_allowed(&n1, &w("create -f -"), Some(&node("n1")));
    let e = node_refused(&n1, &w("create -f -"), Some(&node("n2")));
    assert!(
        e.contains(r#"nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2""#),
        "{e}"
    );
    node_allowed(&n2, &w("create -f -"), Some(&node("n2")));
    node_allowed(&n1, &w("get node n1"), None);
    let e = node_refused(&n1, &w("get node n2"), None);
    assert!(
        e.contains(r#"User "system:node:n1" cannot get resource "nodes" in API group "" at the cluster scope: node 'n1' cannot read 'n2', only its own Node object"#),
        "{e}"
    );
    let e = node_refused(&n1, &w("get nodes"), None);
    assert!(
        e.contains("node 'n1' cannot read all nodes, only its own Node object"),
        "{e}"
    );

    // Secrets: only those a pod bound to the node uses.
    c.ok(&w("create secret generic used --from-literal=k=v"));
    c.ok(&w("create secret generic unused --from-literal=k=v"));
    c.apply(
        r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}],
                "volumes": [{"name": "s", "secret": {"secretName": "used"}}]}}"#,
    );
    c.apply(
        r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p2"},
            "spec": {"nodeName": "n2", "containers": [{"name": "c", "image": "nginx"}]}}"#,
    );
    node_allowed(&n1, &w("get secret used"), None);
    let e = node_refused(&n1, &w("get secret unused"), None);
    assert!(
        e.contains(r#"secrets "unused" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'n1' and this object"#),
        "{e}"
    );
    let e = node_refused(&n2, &w("get secret used"), None);
    assert!(
        e.contains("no relationship found between node 'n2' and this object"),
        "{e}"
    );

    // A CSI volume's node secret, in another namespace, through the claim
    // a pod of the node uses and the volume bound to it.
    c.ok(&w("create namespace storage"));
    c.ok(&w(
        "create secret generic csi-node -n storage --from-literal=k=v",
    ));
    c.apply(
        r#"{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                "claimRef": {"namespace": "default", "name": "data"},
                "csi": {"driver": "d.example.com", "volumeHandle": "h",
                    "nodePublishSecretRef": {"namespace": "storage", "name": "csi-node"}}}}"#,
    );
    c.apply(
        r#"{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": "pv1",
                "resources": {"requests": {"storage": "1Gi"}}}}"#,
    );
    let e = node_refused(&n1, &w("get secret csi-node -n storage"), None);
    assert!(e.contains("no relationship found between node 'n1'"), "{e}");
    c.apply(
        r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p4"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}],
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}"#,
    );
    node_allowed(&n1, &w("get secret csi-node -n storage"), None);
    node_refused(&n2, &w("get secret csi-node -n storage"), None);

    // Pods: listed by their node only; a node deletes its own.
    let mine = node_allowed(
        &n1,
        &w("get pods --field-selector spec.nodeName=n1 -o name"),
        None,
    );
    assert_eq!(mine.trim(), "pod/p1\npod/p4");
    let e = node_refused(&n1, &w("get pods"), None);
    assert!(
        e.contains("can only list/watch pods with spec.nodeName field selector"),
        "{e}"
    );
    node_allowed(&n1, &w("get pod p1"), None);
    node_refused(&n1, &w("get pod p2"), None);
    let e = node_refused(&n1, &w("delete pod p2 --wait=false"), None);
    assert!(
        e.contains(r#"pods "p2" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself"#),
        "{e}"
    );

    // NodeRestriction: only mirror pods bound to the node itself and
    // owned by its Node, by uid.
    let uid = c.ok(&w("get node n1 -o jsonpath={.metadata.uid}"));
    let pod = |name: &str, node: &str, mirror: bool, owner_uid: Option<&str>| {
        let ann = if mirror {
            r#", "annotations": {"kubernetes.io/config.mirror": "x"}"#
        } else {
            ""
        };
        let owners = owner_uid.map_or(String::new(), |u| {
            format!(
                r#", "ownerReferences": [{{"apiVersion": "v1", "kind": "Node", "name": "{node}", "uid": "{u}", "controller": true}}]"#
            )
        });
        format!(
            r#"{{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "{name}"{ann}{owners}}},
                "spec": {{"nodeName": "{node}", "containers": [{{"name": "c", "image": "nginx"}}]}}}}"#
        )
    };
    let create = w("create --validate=false -f -");
    let e = node_refused(&n1, &create, Some(&pod("plain", "n1", false, Some(&uid))));
    assert!(
        e.contains(r#"pods "plain" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods"#),
        "{e}"
    );
    let e = node_refused(
        &n1,
        &create,
        Some(&pod("elsewhere", "n2", true, Some(&uid))),
    );
    assert!(
        e.contains(r#"node "n1" can only create pods with spec.nodeName set to itself"#),
        "{e}"
    );
    let e = node_refused(&n1, &create, Some(&pod("orphan", "n1", true, None)));
    assert!(
        e.contains(r#"node "n1" can only create pods with an owner reference set to itself"#),
        "{e}"
    );
    let e = node_refused(&n1, &create, Some(&pod("stale", "n1", true, Some("0000"))));
    assert!(
        e.contains(&format!("node n1 UID mismatch: expected 0000 got {uid}")),
        "{e}"
    );
    node_allowed(&n1, &create, Some(&pod("static", "n1", true, Some(&uid))));

    // Its own labels only within the kubelet's set.
    node_allowed(
        &n1,
        &w("label node n1 example.com/team=a node.kubernetes.io/pool=b"),
        None,
    );
    let e = node_refused(&n1, &w("label node n1 node-role.kubernetes.io/gpu="), None);
    assert!(
        e.contains(r#"nodes "n1" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/gpu"#),
        "{e}"
    );

    // Tokens only bound to a pod of its own, by uid.
    c.ok(&w("create serviceaccount runner"));
    c.apply(
        r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p3"},
            "spec": {"nodeName": "n1", "serviceAccountName": "runner", "containers": [{"name": "c", "image": "nginx"}]}}"#,
    );
    let e = node_refused(&n1, &w("create token runner"), None);
    assert!(
        e.contains(
            r#"serviceaccounts "runner" is forbidden: node requested token not bound to a pod"#
        ),
        "{e}"
    );
    let p3 = c.ok(&w("get pod p3 -o jsonpath={.metadata.uid}"));
    let token = node_allowed(
        &n1,
        &w(&format!("create token runner --bound-object-kind Pod --bound-object-name p3 --bound-object-uid {p3}")),
        None,
    );
    assert!(token.trim().starts_with("ey"), "{token}");

    // Its own Lease, not another's.
    let lease = |name: &str| {
        format!(
            r#"{{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {{"name": "{name}", "namespace": "kube-node-lease"}}, "spec": {{"holderIdentity": "{name}"}}}}"#
        )
    };
    node_allowed(&n1, &w("create -f -"), Some(&lease("n1")));
    let e = node_refused(&n1, &w("create -f -"), Some(&lease("n2")));
    assert!(
        e.contains("can only access node lease with the same name as the requesting node"),
        "{e}"
    );
    let e = node_refused(&n1, &w("get lease n2 -n kube-node-lease"), None);
    assert!(
        e.contains("can only access node lease with the same name as the requesting node"),
        "{e}"
    );

    // Its rules cannot be listed in full, and kubectl says so.
    let o = as_node(&n1, &w("auth can-i --list"), None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "the list may be incomplete: node authorizer does not support user rule resolution"
        ),
        "{}",
        stderr(&o)
    );

    // Under RBAC alone the same certificate has nothing beyond discovery.
    drop(c);
    let c = Cluster::start_with(
        "kubectl-rbac-nodes-rbac-only",
        &["--tls", "--nodes", "0", "--authorization-mode", "RBAC"],
    );
    let n1 = node_kubeconfig(&c, "n1");
    let e = node_refused(&n1, &w("create -f -"), Some(&node("n1")));
    assert!(
        e.contains(r#"User "system:node:n1" cannot create resource "nodes""#),
        "{e}"
    );
}
