//! Which controllers run: kube-controller-manager's `--controllers` flag,
//! with its names and syntax, so that any of kubesim's loops can be left
//! to a real controller manager pointed at the same cluster.
//!
//! The value is a comma-separated list: `*` turns on every controller that
//! is on by default, `name` turns one on, `-name` turns one off, and an
//! explicit name wins over `*` wherever it stands (upstream's
//! `IsControllerEnabled`). kubesim adds `none`: nothing runs. Names are
//! kube-controller-manager's v1.36 ones; its older aliases are accepted
//! too. Upstream controllers kubesim has no loop for are accepted and
//! change nothing, so that one value fits both programs.

use std::collections::BTreeSet;

/// kube-controller-manager v1.36's controllers, by canonical name, each
/// with its older alias (if any) and whether `*` includes it.
const UPSTREAM: &[(&str, Option<&str>, bool)] = &[
    (
        "serviceaccount-token-controller",
        Some("serviceaccount-token"),
        true,
    ),
    ("endpoints-controller", Some("endpoint"), true),
    ("endpointslice-controller", Some("endpointslice"), true),
    (
        "endpointslice-mirroring-controller",
        Some("endpointslicemirroring"),
        true,
    ),
    (
        "replicationcontroller-controller",
        Some("replicationcontroller"),
        true,
    ),
    ("pod-garbage-collector-controller", Some("podgc"), true),
    ("resourcequota-controller", Some("resourcequota"), true),
    ("namespace-controller", Some("namespace"), true),
    ("serviceaccount-controller", Some("serviceaccount"), true),
    (
        "garbage-collector-controller",
        Some("garbagecollector"),
        true,
    ),
    ("daemonset-controller", Some("daemonset"), true),
    ("job-controller", Some("job"), true),
    ("deployment-controller", Some("deployment"), true),
    ("replicaset-controller", Some("replicaset"), true),
    (
        "horizontal-pod-autoscaler-controller",
        Some("horizontalpodautoscaling"),
        true,
    ),
    ("disruption-controller", Some("disruption"), true),
    ("statefulset-controller", Some("statefulset"), true),
    ("cronjob-controller", Some("cronjob"), true),
    (
        "certificatesigningrequest-signing-controller",
        Some("csrsigning"),
        true,
    ),
    (
        "certificatesigningrequest-approving-controller",
        Some("csrapproving"),
        true,
    ),
    (
        "certificatesigningrequest-cleaner-controller",
        Some("csrcleaner"),
        true,
    ),
    ("podcertificaterequest-cleaner-controller", None, true),
    ("ttl-controller", Some("ttl"), true),
    (
        "bootstrap-signer-controller",
        Some("bootstrapsigner"),
        false,
    ),
    ("token-cleaner-controller", Some("tokencleaner"), false),
    ("node-ipam-controller", Some("nodeipam"), true),
    ("node-lifecycle-controller", Some("nodelifecycle"), true),
    ("service-lb-controller", Some("service"), true),
    ("node-route-controller", Some("route"), true),
    (
        "cloud-node-lifecycle-controller",
        Some("cloud-node-lifecycle"),
        true,
    ),
    (
        "persistentvolume-binder-controller",
        Some("persistentvolume-binder"),
        true,
    ),
    (
        "persistentvolume-attach-detach-controller",
        Some("attachdetach"),
        true,
    ),
    (
        "persistentvolume-expander-controller",
        Some("persistentvolume-expander"),
        true,
    ),
    (
        "clusterrole-aggregation-controller",
        Some("clusterrole-aggregation"),
        true,
    ),
    (
        "persistentvolumeclaim-protection-controller",
        Some("pvc-protection"),
        true,
    ),
    (
        "persistentvolume-protection-controller",
        Some("pv-protection"),
        true,
    ),
    ("volumeattributesclass-protection-controller", None, true),
    (
        "ttl-after-finished-controller",
        Some("ttl-after-finished"),
        true,
    ),
    (
        "root-ca-certificate-publisher-controller",
        Some("root-ca-cert-publisher"),
        true,
    ),
    (
        "kube-apiserver-serving-clustertrustbundle-publisher-controller",
        None,
        true,
    ),
    (
        "ephemeral-volume-controller",
        Some("ephemeral-volume"),
        true,
    ),
    (
        "storageversion-garbage-collector-controller",
        Some("storage-version-gc"),
        true,
    ),
    (
        "resourceclaim-controller",
        Some("resource-claim-controller"),
        true,
    ),
    ("device-taint-eviction-controller", None, true),
    (
        "legacy-serviceaccount-token-cleaner-controller",
        Some("legacy-service-account-token-cleaner"),
        true,
    ),
    ("validatingadmissionpolicy-status-controller", None, true),
    ("taint-eviction-controller", None, true),
    ("service-cidr-controller", None, true),
    ("storage-version-migrator-controller", None, true),
    ("selinux-warning-controller", None, false),
];

/// Loops kubesim runs beside kube-controller-manager's that upstream
/// runs in another program: scheduler-plugins' PodGroup controller (its
/// controller manager has no such flag, so the name is kubesim's). Off
/// with `none` or `-podgroup-controller`, for a real one to take over.
const OTHERS: &[(&str, Option<&str>, bool)] = &[("podgroup-controller", None, true)];

fn known() -> impl Iterator<Item = &'static (&'static str, Option<&'static str>, bool)> {
    UPSTREAM.iter().chain(OTHERS)
}

/// The canonical name of `name` (itself, or what its alias stands for).
fn canonical(name: &str) -> Option<&'static str> {
    known()
        .find(|(n, alias, _)| *n == name || *alias == Some(name))
        .map(|(n, _, _)| *n)
}

/// A parsed `--controllers` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Controllers {
    star: bool,
    on: BTreeSet<&'static str>,
    off: BTreeSet<&'static str>,
}

impl Default for Controllers {
    /// `*`: every controller that is on by default.
    fn default() -> Self {
        Controllers {
            star: true,
            on: BTreeSet::new(),
            off: BTreeSet::new(),
        }
    }
}

impl Controllers {
    /// No controller at all.
    pub fn none() -> Self {
        Controllers {
            star: false,
            on: BTreeSet::new(),
            off: BTreeSet::new(),
        }
    }

    /// Parses `*,-deployment-controller`, `job-controller,cronjob`, `none`.
    pub fn parse(value: &str) -> Result<Controllers, String> {
        let mut out = Controllers::none();
        let items: Vec<&str> = value
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if items == ["none"] {
            return Ok(out);
        }
        for item in items {
            if item == "*" {
                out.star = true;
                continue;
            }
            if item == "none" {
                return Err("\"none\" cannot be combined with other controllers".into());
            }
            let (off, name) = match item.strip_prefix('-') {
                Some(n) => (true, n),
                None => (false, item),
            };
            let Some(name) = canonical(name) else {
                return Err(format!(
                    "{name:?} is not in the list of known controllers (kube-controller-manager's names, such as deployment-controller)"
                ));
            };
            if off {
                out.off.insert(name);
            } else {
                out.on.insert(name);
            }
        }
        Ok(out)
    }

    /// Whether the controller of canonical name `name` runs.
    pub fn enabled(&self, name: &str) -> bool {
        if self.off.contains(name) {
            return false;
        }
        if self.on.contains(name) {
            return true;
        }
        self.star && known().any(|(n, _, default_on)| *n == name && *default_on)
    }

    /// Whether nothing runs.
    pub fn is_none(&self) -> bool {
        known().all(|(n, _, _)| !self.enabled(n))
    }
}

impl std::str::FromStr for Controllers {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Controllers::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_turns_on_the_defaults() {
        let c = Controllers::parse("*").expect("parse");
        assert!(c.enabled("deployment-controller"));
        assert!(c.enabled("garbage-collector-controller"));
        // Off by default upstream, so not part of `*`.
        assert!(!c.enabled("bootstrap-signer-controller"));
        assert_eq!(c, Controllers::default());
    }

    #[test]
    fn explicit_names_win_over_star_wherever_they_stand() {
        let c = Controllers::parse("-deployment-controller,*").expect("parse");
        assert!(!c.enabled("deployment-controller"));
        assert!(c.enabled("replicaset-controller"));
        let c = Controllers::parse("*,bootstrap-signer-controller").expect("parse");
        assert!(c.enabled("bootstrap-signer-controller"));
    }

    #[test]
    fn names_alone_turn_on_only_those() {
        let c = Controllers::parse("job-controller, cronjob").expect("parse");
        assert!(c.enabled("job-controller"));
        // An alias names the same controller.
        assert!(c.enabled("cronjob-controller"));
        assert!(!c.enabled("deployment-controller"));
    }

    #[test]
    fn none_turns_everything_off() {
        let c = Controllers::parse("none").expect("parse");
        assert!(c.is_none());
        assert!(!c.enabled("namespace-controller"));
        assert!(Controllers::parse("").expect("parse").is_none());
        assert!(!Controllers::default().is_none());
    }

    #[test]
    fn unknown_names_are_one_clear_error() {
        let e = Controllers::parse("*,-deployments").expect_err("unknown");
        assert!(
            e.starts_with("\"deployments\" is not in the list of known controllers"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        assert!(Controllers::parse("none,job-controller").is_err());
    }
}
