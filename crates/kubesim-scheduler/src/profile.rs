//! A profile: the plugins one `schedulerName` runs at each extension
//! point, built from its [`ProfileConfig`].
//!
//! A plugin's PreFilter runs when the plugin filters and its PreScore when
//! it scores (as well as when named at those points), since upstream's
//! plugins need them to work.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::config::{default_weight, ProfileConfig};
use crate::framework::{
    Code, CycleState, Filters, NodeInfo, Plugin, PodInfo, Points, PostFilter, Snapshot, Status,
};
use crate::plugins::{post_filter_registry, registry};

/// Plugins with their Score weights.
type Weighted = Vec<(Arc<dyn Plugin>, i64)>;

pub struct Profile {
    pub name: Arc<str>,
    pub percentage_of_nodes_to_score: Option<u32>,
    pub pre_filter: Vec<Arc<dyn Plugin>>,
    pub filter: Vec<Arc<dyn Plugin>>,
    pub pre_score: Vec<Arc<dyn Plugin>>,
    pub score: Vec<(Arc<dyn Plugin>, i64)>,
    pub post_filter: Vec<Arc<dyn PostFilter>>,
    /// Coscheduling is enabled: pods of a PodGroup are placed together
    /// (see [`crate::coscheduling`]).
    pub gang: bool,
    /// A batch policy (see [`crate::batsim`]): the profile's pending pods
    /// are planned all together, as jobs in submission order.
    pub policy: Option<crate::batsim::Policy>,
}

#[derive(Clone)]
enum Built {
    Plugin(Arc<dyn Plugin>),
    /// Built separately, into the PostFilter list.
    PostFilter,
}

fn implements(p: Points, point: &str) -> bool {
    match point {
        "preFilter" => p.pre_filter,
        "filter" => p.filter,
        "preScore" => p.pre_score,
        "score" => p.score,
        _ => false,
    }
}

impl Profile {
    pub fn build(cfg: &ProfileConfig) -> Result<Profile, String> {
        let plugins = registry();
        let post_filters = post_filter_registry();
        let empty = Value::Object(Default::default());
        let mut built: BTreeMap<String, Option<Built>> = BTreeMap::new();
        let mut get_any = |name: &str| -> Result<Option<Built>, String> {
            if !built.contains_key(name) {
                let args = cfg.plugin_args.get(name).unwrap_or(&empty);
                let b = if let Some(f) = plugins.get(name) {
                    Some(Built::Plugin(
                        f(args).map_err(|e| format!("pluginConfig[{name}].args.{e}"))?,
                    ))
                } else if post_filters.contains_key(name) {
                    Some(Built::PostFilter)
                } else {
                    tracing::debug!(plugin = name, profile = %cfg.scheduler_name, "plugin not available, skipped");
                    None
                };
                built.insert(name.to_string(), b);
            }
            Ok(built.get(name).cloned().flatten())
        };
        let mut get = |name: &str| -> Result<Option<Arc<dyn Plugin>>, String> {
            Ok(match get_any(name)? {
                Some(Built::Plugin(p)) => Some(p),
                _ => None,
            })
        };
        let multi = cfg.multi_point_plugins();
        let mut lists: BTreeMap<&str, Weighted> = BTreeMap::new();
        for point in ["preFilter", "filter", "preScore", "score"] {
            let mut entries: Vec<(String, i64, bool)> = Vec::new();
            for (name, w, dflt) in &multi {
                if let Some(p) = get(name)? {
                    if implements(p.points(), point) {
                        entries.push((name.clone(), *w, *dflt));
                    }
                }
            }
            if let Some(set) = cfg.points.get(point) {
                if set.disabled.iter().any(|d| d == "*") {
                    entries.retain(|(_, _, dflt)| !dflt);
                }
                entries.retain(|(n, _, _)| !set.disabled.contains(n));
                for (name, w) in &set.enabled {
                    let Some(p) = get(name)? else { continue };
                    if !implements(p.points(), point) {
                        return Err(format!(
                            "plugins.{point}.enabled: {name} is not a {point} plugin"
                        ));
                    }
                    let weight = w.filter(|w| *w > 0).unwrap_or_else(|| default_weight(name));
                    match entries.iter_mut().find(|(n, _, _)| n == name) {
                        Some(e) => e.1 = w.filter(|w| *w > 0).unwrap_or(e.1),
                        None => entries.push((name.clone(), weight, false)),
                    }
                }
            }
            let mut list = Vec::new();
            for (name, w, _) in entries {
                if let Some(p) = get(&name)? {
                    list.push((p, w));
                }
            }
            lists.insert(point, list);
        }
        // Companion points: a filter's PreFilter, a score's PreScore.
        let with_companion = |own: &[(Arc<dyn Plugin>, i64)],
                              main: &[(Arc<dyn Plugin>, i64)],
                              pick: fn(Points) -> bool|
         -> Vec<Arc<dyn Plugin>> {
            let mut out: Vec<Arc<dyn Plugin>> = own.iter().map(|(p, _)| p.clone()).collect();
            for (p, _) in main {
                if pick(p.points()) && !out.iter().any(|o| o.name() == p.name()) {
                    out.push(p.clone());
                }
            }
            out
        };
        let pre_filter = with_companion(&lists["preFilter"], &lists["filter"], |p| p.pre_filter);
        let pre_score = with_companion(&lists["preScore"], &lists["score"], |p| p.pre_score);
        // PostFilter plugins: from multiPoint, then the postFilter point.
        let mut pf_names: Vec<(String, bool)> = multi
            .iter()
            .filter(|(n, _, _)| post_filters.contains_key(n.as_str()))
            .map(|(n, _, d)| (n.clone(), *d))
            .collect();
        if let Some(set) = cfg.points.get("postFilter") {
            if set.disabled.iter().any(|d| d == "*") {
                pf_names.retain(|(_, d)| !d);
            }
            pf_names.retain(|(n, _)| !set.disabled.contains(n));
            for (n, _) in &set.enabled {
                if !pf_names.iter().any(|(m, _)| m == n) {
                    pf_names.push((n.clone(), false));
                }
            }
        }
        let mut post_filter = Vec::new();
        for (n, _) in pf_names {
            let f = post_filters.get(n.as_str()).copied();
            if let Some(f) = f {
                let args = cfg.plugin_args.get(&n).unwrap_or(&empty);
                post_filter.push(f(args).map_err(|e| format!("pluginConfig[{n}].args.{e}"))?);
            }
        }
        Ok(Profile {
            name: cfg.scheduler_name.as_str().into(),
            percentage_of_nodes_to_score: cfg.percentage_of_nodes_to_score,
            filter: lists["filter"].iter().map(|(p, _)| p.clone()).collect(),
            score: lists["score"].clone(),
            pre_filter,
            pre_score,
            post_filter,
            gang: cfg.enables(crate::coscheduling::NAME),
            policy: crate::batsim::Policy::of(cfg)?,
        })
    }

    /// Runs every PreFilter into `state`; Err with the rejecting status.
    pub fn run_pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snap: &Snapshot,
    ) -> Result<(), Status> {
        for p in &self.pre_filter {
            let mut s = p.pre_filter(state, pod, snap);
            match s.code {
                Code::Success => {}
                Code::Skip => {
                    state.skip_filter.insert(p.name());
                }
                _ => {
                    s.plugin = p.name();
                    return Err(s);
                }
            }
        }
        Ok(())
    }

    /// Every Filter plugin not skipped, stopping at the first failure.
    pub fn run_filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        for p in &self.filter {
            if state.skip_filter.contains(p.name()) {
                continue;
            }
            let mut s = p.filter(state, pod, node);
            if !s.is_success() {
                s.plugin = p.name();
                return s;
            }
        }
        Status::success()
    }
}

impl Filters for Profile {
    fn pre_filter(&self, pod: &PodInfo, snap: &Snapshot) -> Result<CycleState, Status> {
        let mut state = CycleState::default();
        self.run_pre_filter(&mut state, pod, snap)?;
        Ok(state)
    }

    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        self.run_filter(state, pod, node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{PluginSet, DEFAULT_SCHEDULER_NAME};

    fn names(v: &[Arc<dyn Plugin>]) -> Vec<String> {
        v.iter().map(|p| p.name().to_string()).collect()
    }

    #[test]
    fn default_profile() {
        let p = Profile::build(&ProfileConfig::default_named(DEFAULT_SCHEDULER_NAME)).unwrap();
        assert_eq!(
            names(&p.filter),
            [
                "NodeUnschedulable",
                "NodeName",
                "TaintToleration",
                "NodeAffinity",
                "NodePorts",
                "NodeResourcesFit",
                "VolumeRestrictions",
                "PodTopologySpread",
                "InterPodAffinity"
            ]
        );
        let scores: Vec<(String, i64)> = p
            .score
            .iter()
            .map(|(p, w)| (p.name().to_string(), *w))
            .collect();
        assert_eq!(
            scores,
            [
                ("TaintToleration".to_string(), 3),
                ("NodeAffinity".to_string(), 2),
                ("NodeResourcesFit".to_string(), 1),
                ("PodTopologySpread".to_string(), 2),
                ("InterPodAffinity".to_string(), 2),
                ("NodeResourcesBalancedAllocation".to_string(), 1),
                ("ImageLocality".to_string(), 1),
            ]
        );
    }

    #[test]
    fn disabling_and_reweighting() {
        let mut cfg = ProfileConfig::default_named("x");
        cfg.points.insert(
            "score".into(),
            PluginSet {
                enabled: vec![("NodeResourcesFit".into(), Some(7))],
                disabled: vec!["ImageLocality".into(), "TaintToleration".into()],
            },
        );
        cfg.points.insert(
            "filter".into(),
            PluginSet {
                enabled: vec![],
                disabled: vec!["*".into()],
            },
        );
        let p = Profile::build(&cfg).unwrap();
        assert!(p.filter.is_empty());
        let scores: Vec<(String, i64)> = p
            .score
            .iter()
            .map(|(p, w)| (p.name().to_string(), *w))
            .collect();
        assert_eq!(
            scores,
            [
                ("NodeAffinity".to_string(), 2),
                ("NodeResourcesFit".to_string(), 7),
                ("PodTopologySpread".to_string(), 2),
                ("InterPodAffinity".to_string(), 2),
                ("NodeResourcesBalancedAllocation".to_string(), 1),
            ]
        );
        // Disabling a Score leaves its PreScore, as upstream does.
        assert!(names(&p.pre_score).contains(&"TaintToleration".to_string()));
    }

    #[test]
    fn round_robin_profile() {
        let p = Profile::build(&ProfileConfig::round_robin("round-robin")).unwrap();
        assert_eq!(p.score.len(), 1);
        assert_eq!(p.score[0].0.name(), "RoundRobin");
        assert_eq!(names(&p.pre_score), ["RoundRobin"]);
        assert_eq!(p.filter.len(), 9);
    }
}
