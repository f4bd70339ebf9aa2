//! The default roles and bindings (`policy.yaml`), created when missing
//! at every start, as kube-apiserver's bootstrap reconciles them.
//! Aggregated roles are created with their rules already gathered.

use kubesim_runtime::WriteOptions;
use serde_json::{json, Map, Value};

use super::GROUP;
use crate::service::Caller;
use crate::Server;

const POLICY: &str = include_str!("policy.yaml");

/// The prefix of the controllers' ClusterRoles and their bindings.
pub const CONTROLLER_PREFIX: &str = "system:controller:";
/// Where the controllers' ServiceAccounts live.
pub const CONTROLLER_NAMESPACE: &str = "kube-system";

/// The user a controller acts as when it runs with its own ServiceAccount
/// (`name` as upstream's controller policy spells it, e.g.
/// `replicaset-controller`).
pub fn controller_user(name: &str) -> crate::auth::UserInfo {
    crate::auth::authn::service_account_user(CONTROLLER_NAMESPACE, name, "")
}

/// The ServiceAccount the in-process emulator acts as under RBAC, in
/// [`CONTROLLER_NAMESPACE`], bound to the ClusterRole of the same name.
pub const EMULATOR_ACCOUNT: &str = "kubesim-emulator";

/// The in-process emulator's user.
pub fn emulator_user() -> crate::auth::UserInfo {
    crate::auth::authn::service_account_user(CONTROLLER_NAMESPACE, EMULATOR_ACCOUNT, "")
}

/// The ServiceAccount the in-process PodGroup controller acts as, in
/// [`CONTROLLER_NAMESPACE`], bound to scheduler-plugins' ClusterRole of the
/// same name.
pub const PODGROUP_CONTROLLER_ACCOUNT: &str = "scheduler-plugins-controller";

/// The ServiceAccounts in [`CONTROLLER_NAMESPACE`] that the built-in
/// components act as: one per controller role, the emulator's and the
/// PodGroup controller's.
pub fn service_accounts() -> Vec<String> {
    let policy: Value = serde_saphyr::from_str(POLICY).expect("policy.yaml parses");
    policy["controllerRoles"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["name"].as_str().map(str::to_string))
        .chain([
            EMULATOR_ACCOUNT.to_string(),
            PODGROUP_CONTROLLER_ACCOUNT.to_string(),
        ])
        .collect()
}

/// The policy's objects, in creation order: roles before the bindings
/// that name them.
pub fn objects() -> Vec<(&'static str, Value)> {
    let policy: Value = serde_saphyr::from_str(POLICY).expect("policy.yaml parses");
    let list = |k: &str| policy[k].as_array().cloned().unwrap_or_default();
    let meta = |entry: &Value| {
        let mut labels = entry["labels"].as_object().cloned().unwrap_or_default();
        labels.insert("kubernetes.io/bootstrapping".into(), "rbac-defaults".into());
        let mut m = json!({
            "name": entry["name"],
            "labels": labels,
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        });
        if let Some(ns) = entry["namespace"].as_str() {
            m["namespace"] = ns.into();
        }
        m
    };
    let role = |kind: &str, entry: &Value| {
        let mut o = Map::new();
        o.insert("apiVersion".into(), format!("{GROUP}/v1").into());
        o.insert("kind".into(), kind.into());
        o.insert("metadata".into(), meta(entry));
        if let Some(rule) = entry.get("aggregationRule") {
            o.insert("aggregationRule".into(), rule.clone());
        }
        o.insert(
            "rules".into(),
            entry.get("rules").cloned().unwrap_or_else(|| json!([])),
        );
        Value::Object(o)
    };
    // Each controller's role is system:controller:<name>, bound to the
    // ServiceAccount kube-system/<name> under the same name.
    let controller_roles: Vec<Value> = list("controllerRoles")
        .iter()
        .map(|e| {
            let mut e = e.clone();
            e["name"] = format!(
                "{CONTROLLER_PREFIX}{}",
                e["name"].as_str().unwrap_or_default()
            )
            .into();
            e
        })
        .collect();
    let controller_bindings: Vec<Value> = list("controllerRoles")
        .iter()
        .map(|e| {
            let sa = e["name"].as_str().unwrap_or_default();
            json!({
                "name": format!("{CONTROLLER_PREFIX}{sa}"),
                "role": format!("{CONTROLLER_PREFIX}{sa}"),
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": CONTROLLER_NAMESPACE}],
            })
        })
        .collect();
    let binding = |kind: &str, role_kind: &str, entry: &Value| {
        let subjects: Vec<Value> = entry["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                let mut s = s.clone();
                if s["kind"] != "ServiceAccount" {
                    s["apiGroup"] = GROUP.into();
                }
                s
            })
            .collect();
        json!({
            "apiVersion": format!("{GROUP}/v1"),
            "kind": kind,
            "metadata": meta(entry),
            "roleRef": {"apiGroup": GROUP, "kind": role_kind, "name": entry["role"]},
            "subjects": subjects,
        })
    };
    let mut cluster_roles: Vec<Value> = list("clusterRoles")
        .iter()
        .chain(controller_roles.iter())
        .map(|e| role("ClusterRole", e))
        .collect();
    // Aggregation is transitive (view into edit into admin): gather
    // until nothing changes.
    loop {
        let mut changed = false;
        for i in 0..cluster_roles.len() {
            if let Some(rules) =
                kubesim_core::rbac::aggregated_rules(&cluster_roles[i], &cluster_roles)
            {
                if cluster_roles[i]["rules"] != json!(rules) {
                    cluster_roles[i]["rules"] = json!(rules);
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut out: Vec<(&'static str, Value)> = Vec::new();
    out.extend(cluster_roles.into_iter().map(|r| ("clusterroles", r)));
    out.extend(list("roles").iter().map(|e| ("roles", role("Role", e))));
    out.extend(
        list("clusterRoleBindings")
            .iter()
            .chain(controller_bindings.iter())
            .map(|e| {
                (
                    "clusterrolebindings",
                    binding("ClusterRoleBinding", "ClusterRole", e),
                )
            }),
    );
    out.extend(
        list("roleBindings")
            .iter()
            .map(|e| ("rolebindings", binding("RoleBinding", "Role", e))),
    );
    out
}

impl Server {
    /// Creates every default role and binding that is missing; existing
    /// ones, perhaps changed by the cluster's admin, are left alone.
    pub(crate) async fn bootstrap_rbac(
        &self,
        caller: &Caller,
    ) -> Result<(), kubesim_core::ApiError> {
        let opts = WriteOptions::default();
        for (plural, obj) in objects() {
            let r = self.resource(GROUP, "v1", plural)?;
            let ns = kubesim_core::meta::namespace(&obj).to_string();
            let key =
                super::super::super::service::object_key(&r, &ns, kubesim_core::meta::name(&obj));
            if self.store.get(&r.storage_key(), &key).is_some() {
                continue;
            }
            match self.create(&r, &ns, obj, &opts, caller).await {
                Ok(_) => {}
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
        self.bootstrap_service_accounts(caller).await
    }

    /// Creates the ServiceAccounts of the built-in components that are
    /// missing, as kube-controller-manager's client builder does when a
    /// controller first asks for its credentials: `kubectl -n kube-system
    /// get sa` lists them, and a binding naming one names an object.
    async fn bootstrap_service_accounts(
        &self,
        caller: &Caller,
    ) -> Result<(), kubesim_core::ApiError> {
        let r = self.resource("", "v1", "serviceaccounts")?;
        let opts = WriteOptions::default();
        // One that exists already (a restart) answers 409 and is kept.
        for name in service_accounts() {
            let obj = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": CONTROLLER_NAMESPACE}});
            match self
                .create(&r, CONTROLLER_NAMESPACE, obj, &opts, caller)
                .await
            {
                Ok(_) => {}
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_parses_and_aggregates() {
        let objs = objects();
        let find = |name: &str| {
            objs.iter()
                .find(|(_, o)| o["metadata"]["name"] == name)
                .map(|(_, o)| o.clone())
                .unwrap_or_else(|| panic!("{name} missing"))
        };
        let admin = find("admin");
        let rules = admin["rules"].as_array().expect("rules");
        // admin holds view's, edit's and its own rules.
        let holds = |resource: &str, verb: &str| {
            rules.iter().any(|r| {
                r["resources"]
                    .as_array()
                    .is_some_and(|l| l.iter().any(|x| x == resource))
                    && r["verbs"]
                        .as_array()
                        .is_some_and(|l| l.iter().any(|x| x == verb))
            })
        };
        assert!(
            holds("pods", "list") && holds("pods", "delete") && holds("rolebindings", "create")
        );
        let view = find("view");
        assert!(!view["rules"].as_array().expect("rules").is_empty());
        assert!(!view["rules"].to_string().contains("\"delete\""));
        let crb = find("system:kube-scheduler");
        assert_eq!(crb["kind"], "ClusterRole");
        let b = objs
            .iter()
            .find(|(p, o)| *p == "clusterrolebindings" && o["metadata"]["name"] == "cluster-admin")
            .expect("binding");
        assert_eq!(b.1["subjects"][0]["name"], "system:masters");
        assert_eq!(b.1["subjects"][0]["apiGroup"], GROUP);
    }

    /// The remote `kubesim emulate` is deployed with the rights the
    /// in-process emulator holds: one set of rules, written twice.
    #[test]
    fn the_deployed_emulator_role_is_the_bootstrapped_one() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../deploy/emulate/rbac.yaml"
        );
        let text = std::fs::read_to_string(path).expect("deploy/emulate/rbac.yaml");
        let deployed: Vec<Value> = text
            .split("\n---")
            .map(|doc| serde_saphyr::from_str::<Value>(doc).expect("manifest parses"))
            .filter(|o| o["kind"] == "ClusterRole")
            .collect();
        assert_eq!(deployed.len(), 1);
        let objs = objects();
        let role = &objs
            .iter()
            .find(|(p, o)| *p == "clusterroles" && o["metadata"]["name"] == EMULATOR_ACCOUNT)
            .expect("the emulator's role")
            .1;
        assert!(!role["rules"].as_array().expect("rules").is_empty());
        assert_eq!(deployed[0]["rules"], role["rules"]);

        let binding = &objs
            .iter()
            .find(|(p, o)| *p == "clusterrolebindings" && o["metadata"]["name"] == EMULATOR_ACCOUNT)
            .expect("the emulator's binding")
            .1;
        assert_eq!(binding["roleRef"]["name"], EMULATOR_ACCOUNT);
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": EMULATOR_ACCOUNT, "namespace": CONTROLLER_NAMESPACE}])
        );
        assert_eq!(
            emulator_user().name,
            "system:serviceaccount:kube-system:kubesim-emulator"
        );
        let accounts = service_accounts();
        assert!(accounts.iter().any(|a| a == EMULATOR_ACCOUNT));
        assert!(accounts.iter().any(|a| a == "replicaset-controller"));
        assert!(accounts.iter().any(|a| a == PODGROUP_CONTROLLER_ACCOUNT));
        let pg = &objs
            .iter()
            .find(|(p, o)| {
                *p == "clusterrolebindings" && o["metadata"]["name"] == PODGROUP_CONTROLLER_ACCOUNT
            })
            .expect("the PodGroup controller's binding")
            .1;
        assert_eq!(
            pg["subjects"],
            json!([{"kind": "ServiceAccount", "name": PODGROUP_CONTROLLER_ACCOUNT, "namespace": CONTROLLER_NAMESPACE}])
        );
    }
}
