//! `KubeSchedulerConfiguration` (kubescheduler.config.k8s.io/v1): profiles,
//! the plugins enabled at each extension point with their weights, plugin
//! args and `percentageOfNodesToScore`. Defaults are upstream v1.33's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// The default profile's plugins in upstream's order, with the weights of
/// those that score. Plugins kubesim does not model (scheduling gates and
/// queue sort are built into the queue; the volume plugins other than
/// VolumeRestrictions need storage provisioning)
/// are listed too, so a configuration naming them is accepted, and are
/// skipped when the profile is built.
pub const DEFAULT_PLUGINS: &[(&str, i64)] = &[
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
];

/// The weight a Score plugin gets when the configuration gives none.
pub fn default_weight(name: &str) -> i64 {
    DEFAULT_PLUGINS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, w)| *w)
        .filter(|w| *w > 0)
        .unwrap_or(1)
}

/// An extension point's enabled and disabled plugins, as configured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PluginSet {
    /// (name, weight when given)
    pub enabled: Vec<(String, Option<i64>)>,
    pub disabled: Vec<String>,
}

/// The extension points a configuration can set that kubesim honours.
/// Of `queueSort` and `permit`, which kubesim's framework does not have,
/// only whether they enable Coscheduling is read (scheduler-plugins'
/// example configurations enable it there).
pub const POINTS: &[&str] = &[
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "permit",
];

#[derive(Clone, Debug, PartialEq)]
pub struct ProfileConfig {
    pub scheduler_name: String,
    pub percentage_of_nodes_to_score: Option<u32>,
    pub multi_point: PluginSet,
    /// By extension point name (see [`POINTS`]).
    pub points: BTreeMap<String, PluginSet>,
    /// `pluginConfig[].args` by plugin name.
    pub plugin_args: BTreeMap<String, Value>,
}

impl ProfileConfig {
    /// The default profile under `name`.
    pub fn default_named(name: &str) -> Self {
        ProfileConfig {
            scheduler_name: name.to_string(),
            percentage_of_nodes_to_score: None,
            multi_point: PluginSet::default(),
            points: BTreeMap::new(),
            plugin_args: BTreeMap::new(),
        }
    }

    /// The round-robin policy: the default filters, and RoundRobin as the
    /// only score, every node considered.
    pub fn round_robin(name: &str) -> Self {
        let mut p = Self::default_named(name);
        p.percentage_of_nodes_to_score = Some(100);
        p.points.insert(
            "score".into(),
            PluginSet {
                enabled: vec![("RoundRobin".into(), Some(1))],
                disabled: vec!["*".into()],
            },
        );
        p.points.insert(
            "preScore".into(),
            PluginSet {
                enabled: vec![],
                disabled: vec!["*".into()],
            },
        );
        p
    }

    /// The effective multiPoint list: defaults minus those disabled (`*`
    /// disables all), then those enabled (re-enabling a default moves it
    /// and may change its weight). Returns (name, weight, from defaults).
    pub fn multi_point_plugins(&self) -> Vec<(String, i64, bool)> {
        let all = self.multi_point.disabled.iter().any(|d| d == "*");
        let enabled: BTreeSet<&str> = self
            .multi_point
            .enabled
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        let mut out: Vec<(String, i64, bool)> = DEFAULT_PLUGINS
            .iter()
            .filter(|(n, _)| {
                !all && !self.multi_point.disabled.iter().any(|d| d == n) && !enabled.contains(n)
            })
            .map(|(n, _)| (n.to_string(), default_weight(n), true))
            .collect();
        for (n, w) in &self.multi_point.enabled {
            out.push((
                n.clone(),
                w.filter(|w| *w > 0).unwrap_or_else(|| default_weight(n)),
                false,
            ));
        }
        out
    }
}

impl ProfileConfig {
    /// Whether `plugin` is enabled at multiPoint or at any point, and not
    /// disabled at multiPoint.
    pub fn enables(&self, plugin: &str) -> bool {
        let named = |set: &PluginSet| set.enabled.iter().any(|(n, _)| n == plugin);
        let disabled = self.multi_point.disabled.iter().any(|d| d == plugin);
        !disabled && (named(&self.multi_point) || self.points.values().any(named))
    }
}

impl SchedulerConfig {
    /// Whether a profile enables gang scheduling (the Coscheduling plugin),
    /// so that the PodGroup kind must be served.
    pub fn uses_coscheduling(&self) -> bool {
        self.profiles
            .iter()
            .any(|p| p.enables(crate::coscheduling::NAME))
    }
}

/// What the scheduler runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedulerConfig {
    /// None (or 0): upstream's adaptive percentage.
    pub percentage_of_nodes_to_score: Option<u32>,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    pub profiles: Vec<ProfileConfig>,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            percentage_of_nodes_to_score: None,
            initial_backoff: crate::queue::INITIAL_BACKOFF,
            max_backoff: crate::queue::MAX_BACKOFF,
            profiles: vec![ProfileConfig::default_named(DEFAULT_SCHEDULER_NAME)],
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawConfig {
    api_version: Option<String>,
    kind: Option<String>,
    percentage_of_nodes_to_score: Option<i64>,
    pod_initial_backoff_seconds: Option<i64>,
    pod_max_backoff_seconds: Option<i64>,
    profiles: Option<Vec<RawProfile>>,
    // Accepted for compatibility; they configure what kubesim does not have.
    #[allow(dead_code)]
    parallelism: Option<Value>,
    #[allow(dead_code)]
    leader_election: Option<Value>,
    #[allow(dead_code)]
    client_connection: Option<Value>,
    #[allow(dead_code)]
    healthz_bind_address: Option<Value>,
    #[allow(dead_code)]
    metrics_bind_address: Option<Value>,
    #[allow(dead_code)]
    enable_profiling: Option<Value>,
    #[allow(dead_code)]
    enable_contention_profiling: Option<Value>,
    #[allow(dead_code)]
    extenders: Option<Value>,
    #[allow(dead_code)]
    delay_cache_until_active: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawProfile {
    scheduler_name: Option<String>,
    percentage_of_nodes_to_score: Option<i64>,
    plugins: Option<RawPlugins>,
    plugin_config: Option<Vec<RawPluginConfig>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawPlugins {
    multi_point: Option<RawSet>,
    pre_filter: Option<RawSet>,
    filter: Option<RawSet>,
    post_filter: Option<RawSet>,
    pre_score: Option<RawSet>,
    score: Option<RawSet>,
    // Points without a counterpart here; accepted and ignored.
    #[allow(dead_code)]
    pre_enqueue: Option<RawSet>,
    queue_sort: Option<RawSet>,
    #[allow(dead_code)]
    reserve: Option<RawSet>,
    permit: Option<RawSet>,
    #[allow(dead_code)]
    pre_bind: Option<RawSet>,
    #[allow(dead_code)]
    bind: Option<RawSet>,
    #[allow(dead_code)]
    post_bind: Option<RawSet>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSet {
    enabled: Option<Vec<RawPlugin>>,
    disabled: Option<Vec<RawPlugin>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlugin {
    name: String,
    weight: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPluginConfig {
    name: String,
    args: Option<Value>,
}

fn percentage(v: Option<i64>, field: &str) -> Result<Option<u32>, String> {
    match v {
        None | Some(0) => Ok(None),
        Some(p) if (1..=100).contains(&p) => Ok(Some(p as u32)),
        Some(p) => Err(format!("{field}: {p} is not a percentage in 0..100")),
    }
}

fn plugin_set(raw: Option<RawSet>, field: &str) -> Result<PluginSet, String> {
    let Some(raw) = raw else {
        return Ok(PluginSet::default());
    };
    let mut set = PluginSet::default();
    for (i, p) in raw.enabled.unwrap_or_default().into_iter().enumerate() {
        if p.name.is_empty() || p.name == "*" {
            return Err(format!("{field}.enabled[{i}].name: must name a plugin"));
        }
        if let Some(w) = p.weight {
            if w < 0 {
                return Err(format!("{field}.enabled[{i}].weight: must not be negative"));
            }
        }
        set.enabled.push((p.name, p.weight));
    }
    for (i, p) in raw.disabled.unwrap_or_default().into_iter().enumerate() {
        if p.name.is_empty() {
            return Err(format!(
                "{field}.disabled[{i}].name: must name a plugin or be \"*\""
            ));
        }
        set.disabled.push(p.name);
    }
    Ok(set)
}

impl SchedulerConfig {
    /// Reads a configuration file (YAML or JSON).
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses a configuration (YAML or JSON) and checks that every profile
    /// can be built, so a bad plugin arg is reported here.
    pub fn parse(text: &str) -> Result<Self, String> {
        let raw: RawConfig = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        match raw.api_version.as_deref() {
            Some("kubescheduler.config.k8s.io/v1") => {}
            Some(other) => {
                return Err(format!(
                    "apiVersion: {other:?} is not supported (kubescheduler.config.k8s.io/v1)"
                ))
            }
            None => return Err("apiVersion: required (kubescheduler.config.k8s.io/v1)".into()),
        }
        if raw.kind.as_deref() != Some("KubeSchedulerConfiguration") {
            return Err("kind: must be KubeSchedulerConfiguration".into());
        }
        let mut cfg = SchedulerConfig {
            percentage_of_nodes_to_score: percentage(
                raw.percentage_of_nodes_to_score,
                "percentageOfNodesToScore",
            )?,
            ..SchedulerConfig::default()
        };
        if let Some(s) = raw.pod_initial_backoff_seconds {
            if s <= 0 {
                return Err("podInitialBackoffSeconds: must be greater than 0".into());
            }
            cfg.initial_backoff = Duration::from_secs(s as u64);
        }
        if let Some(s) = raw.pod_max_backoff_seconds {
            if (s as u64) < cfg.initial_backoff.as_secs() || s <= 0 {
                return Err(
                    "podMaxBackoffSeconds: must be at least podInitialBackoffSeconds".into(),
                );
            }
            cfg.max_backoff = Duration::from_secs(s as u64);
        }
        if let Some(profiles) = raw.profiles.filter(|p| !p.is_empty()) {
            cfg.profiles.clear();
            let mut names = BTreeSet::new();
            for (i, p) in profiles.into_iter().enumerate() {
                let at = format!("profiles[{i}]");
                let name = p
                    .scheduler_name
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| DEFAULT_SCHEDULER_NAME.to_string());
                if !names.insert(name.clone()) {
                    return Err(format!("{at}.schedulerName: {name:?} is used twice"));
                }
                let mut prof = ProfileConfig::default_named(&name);
                prof.percentage_of_nodes_to_score = percentage(
                    p.percentage_of_nodes_to_score,
                    &format!("{at}.percentageOfNodesToScore"),
                )?;
                if let Some(pl) = p.plugins {
                    let f = |s| format!("{at}.plugins.{s}");
                    prof.multi_point = plugin_set(pl.multi_point, &f("multiPoint"))?;
                    for (point, set) in [
                        ("queueSort", pl.queue_sort),
                        ("preFilter", pl.pre_filter),
                        ("filter", pl.filter),
                        ("postFilter", pl.post_filter),
                        ("preScore", pl.pre_score),
                        ("score", pl.score),
                        ("permit", pl.permit),
                    ] {
                        let s = plugin_set(set, &f(point))?;
                        if s != PluginSet::default() {
                            prof.points.insert(point.to_string(), s);
                        }
                    }
                }
                for (j, pc) in p.plugin_config.unwrap_or_default().into_iter().enumerate() {
                    if pc.name.is_empty() {
                        return Err(format!("{at}.pluginConfig[{j}].name: required"));
                    }
                    let args = pc.args.unwrap_or(Value::Object(Default::default()));
                    if !args.is_object() {
                        return Err(format!("{at}.pluginConfig[{j}].args: must be an object"));
                    }
                    prof.plugin_args.insert(pc.name, args);
                }
                cfg.profiles.push(prof);
            }
        }
        for (i, p) in cfg.profiles.iter().enumerate() {
            crate::profile::Profile::build(p).map_err(|e| format!("profiles[{i}].{e}"))?;
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str =
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

    #[test]
    fn defaults_are_upstream_weights() {
        let p = ProfileConfig::default_named("default-scheduler");
        let mp = p.multi_point_plugins();
        let w = |n: &str| mp.iter().find(|(m, _, _)| m == n).unwrap().1;
        assert_eq!(w("TaintToleration"), 3);
        assert_eq!(w("NodeAffinity"), 2);
        assert_eq!(w("PodTopologySpread"), 2);
        assert_eq!(w("InterPodAffinity"), 2);
        assert_eq!(w("NodeResourcesFit"), 1);
        assert_eq!(w("NodeResourcesBalancedAllocation"), 1);
        assert_eq!(w("ImageLocality"), 1);
    }

    #[test]
    fn parses_profiles_points_and_args() {
        let text = format!(
            "{HEAD}percentageOfNodesToScore: 40\npodInitialBackoffSeconds: 2\nprofiles:\n\
- schedulerName: default-scheduler\n  plugins:\n    score:\n      disabled:\n      - name: ImageLocality\n      enabled:\n      - name: NodeResourcesFit\n        weight: 5\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n\
- schedulerName: packer\n  percentageOfNodesToScore: 100\n  plugins:\n    multiPoint:\n      disabled:\n      - name: '*'\n      enabled:\n      - name: NodeResourcesFit\n"
        );
        let c = SchedulerConfig::parse(&text).unwrap();
        assert_eq!(c.percentage_of_nodes_to_score, Some(40));
        assert_eq!(c.initial_backoff, Duration::from_secs(2));
        assert_eq!(c.profiles.len(), 2);
        let p0 = &c.profiles[0];
        assert_eq!(p0.points["score"].disabled, ["ImageLocality"]);
        assert_eq!(
            p0.points["score"].enabled,
            [("NodeResourcesFit".to_string(), Some(5))]
        );
        assert_eq!(
            p0.plugin_args["NodeResourcesFit"]["scoringStrategy"]["type"],
            "MostAllocated"
        );
        assert_eq!(c.profiles[1].percentage_of_nodes_to_score, Some(100));
        let mp = c.profiles[1].multi_point_plugins();
        assert_eq!(mp.len(), 1);
    }

    #[test]
    fn coscheduling_is_enabled_where_scheduler_plugins_puts_it() {
        // (plugins block, enables Coscheduling?)
        let table = [
            ("    multiPoint:\n      enabled:\n      - name: Coscheduling\n", true),
            ("    queueSort:\n      enabled:\n      - name: Coscheduling\n      disabled:\n      - name: '*'\n", true),
            ("    preFilter:\n      enabled:\n      - name: Coscheduling\n", true),
            ("    permit:\n      enabled:\n      - name: Coscheduling\n", true),
            ("    multiPoint:\n      enabled:\n      - name: Coscheduling\n      disabled:\n      - name: Coscheduling\n", false),
            ("    score:\n      enabled:\n      - name: NodeResourcesFit\n", false),
        ];
        for (plugins, want) in table {
            let text = format!("{HEAD}profiles:\n- plugins:\n{plugins}");
            let c = SchedulerConfig::parse(&text).unwrap();
            assert_eq!(c.uses_coscheduling(), want, "{plugins}");
        }
        assert!(!SchedulerConfig::default().uses_coscheduling());
    }

    #[test]
    fn json_is_accepted() {
        let c = SchedulerConfig::parse(
            r#"{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [{"schedulerName": "x"}]}"#,
        )
        .unwrap();
        assert_eq!(c.profiles[0].scheduler_name, "x");
    }

    #[test]
    fn bad_configs_name_the_field() {
        let cases = [
            (format!("{HEAD}percentageOfNodesToScore: 150\n"), "percentageOfNodesToScore"),
            (format!("{HEAD}bogus: 1\n"), "bogus"),
            ("apiVersion: v1\nkind: KubeSchedulerConfiguration\n".to_string(), "apiVersion"),
            (format!("{HEAD}profiles:\n- schedulerName: a\n- schedulerName: a\n"), "profiles[1].schedulerName"),
            (format!("{HEAD}profiles:\n- plugins:\n    score:\n      enabled:\n      - name: NodeAffinity\n        weight: -1\n"), "profiles[0].plugins.score.enabled[0].weight"),
            (format!("{HEAD}profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: Nope\n"), "profiles[0].pluginConfig[NodeResourcesFit].args.scoringStrategy.type"),
            (format!("{HEAD}profiles:\n- plugins:\n    filter:\n      enabled:\n      - nam: X\n"), "nam"),
        ];
        for (text, field) in cases {
            let e = SchedulerConfig::parse(&text).err().unwrap_or_default();
            assert!(e.contains(field), "{field}: {e}");
        }
    }
}
