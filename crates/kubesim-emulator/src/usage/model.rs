//! The emulated usage of every container, pod and node, as the metrics
//! publisher, the Metric endpoints and CEL's `Usage()` all read it.
//!
//! A container's cpu and memory are each decided by the first source
//! that speaks of them, from the most specific to the most general:
//!
//! 1. the ResourceUsage of the pod's name and namespace;
//! 2. Apate's `pod_resources` (first container), which also names pods
//!    one by one (through their `apate` label);
//! 3. the ClusterResourceUsages, in name order, whose selector picks the
//!    pod;
//! 4. kwok's pod annotations `kwok.x-k8s.io/usage-cpu` / `-memory`;
//! 5. 10 % of the container's requests.
//!
//! kwok itself has only 1 and 3 (a ResourceUsage hides every
//! ClusterResourceUsage); 4 and 5 keep `kubectl top` meaningful in a
//! cluster that loads no usage objects at all, and are floored at 1m and
//! 1Mi as an idle process. An expression that fails is reported once (a
//! log line and a Warning event on its object) and the next source
//! answers.

use std::collections::BTreeSet;
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_runtime::{Cache, Clock, EventRecorder, EventType, Rng};
use parking_lot::{Mutex, RwLock};
use serde_json::Value;

use super::cel::{self, Host, Resource, Scope, Target};
use super::cumulative::{Key, Totals};
use super::metric::MetricSet;
use super::rules::{Rule, Rules, Source};
use super::{apate_usage, base_usage, Usage};
use crate::apate::Faults;
use crate::managed::NodeSelector;

/// Failures remembered so each is reported once; past this many the
/// oldest are forgotten rather than memory growing.
const MAX_REPORTED: usize = 10_000;

pub struct Model {
    pub clock: Clock,
    rng: Rng,
    faults: Arc<Faults>,
    pub selector: NodeSelector,
    pub pods: Arc<Cache>,
    pub nodes: Arc<Cache>,
    rules: RwLock<Arc<Rules>>,
    metrics: RwLock<Arc<Vec<MetricSet>>>,
    totals: Mutex<Totals>,
    reported: Mutex<BTreeSet<String>>,
    recorder: Option<EventRecorder>,
}

impl Model {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        clock: Clock,
        rng: Rng,
        faults: Arc<Faults>,
        selector: NodeSelector,
        pods: Arc<Cache>,
        nodes: Arc<Cache>,
        recorder: Option<EventRecorder>,
    ) -> Arc<Model> {
        Arc::new(Model {
            clock,
            rng,
            faults,
            selector,
            pods,
            nodes,
            rules: Default::default(),
            metrics: Default::default(),
            totals: Default::default(),
            reported: Default::default(),
            recorder,
        })
    }

    pub fn set_rules(&self, rules: Rules) {
        *self.rules.write() = Arc::new(rules);
    }

    pub fn set_metrics(&self, metrics: Vec<MetricSet>) {
        *self.metrics.write() = Arc::new(metrics);
    }

    pub fn metrics(&self) -> Arc<Vec<MetricSet>> {
        self.metrics.read().clone()
    }

    pub fn host(self: &Arc<Self>) -> Arc<dyn Host> {
        Arc::new(ModelHost(self.clone()))
    }

    /// The usage of each container of `pod`, in spec order.
    pub fn pod_usage(self: &Arc<Self>, pod: &Value) -> Vec<(String, Usage)> {
        let base = base_usage(pod);
        containers(pod)
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let fallback = base.get(i).map(|b| b.1).unwrap_or_default();
                let cpu = self.rate(pod, i, c, Resource::Cpu, fallback, 0);
                let memory = self.rate(pod, i, c, Resource::Memory, fallback, 0);
                let name = c.get("name").and_then(Value::as_str).unwrap_or("");
                (
                    name.to_string(),
                    Usage {
                        cpu_milli: (cpu * 1000.0).round() as i128,
                        memory: memory.round() as i128,
                    },
                )
            })
            .collect()
    }

    /// Cores or bytes container `index` of `pod` uses now.
    fn rate(
        self: &Arc<Self>,
        pod: &Value,
        index: usize,
        container: &Value,
        resource: Resource,
        fallback: Usage,
        depth: u8,
    ) -> f64 {
        let (ns, name) = (meta::namespace(pod), meta::name(pod));
        let cname = container.get("name").and_then(Value::as_str).unwrap_or("");
        let rules = self.rules.read().clone();
        let mut candidates: Vec<&Rule> = rules
            .by_pod
            .get(&(ns.into(), name.into()))
            .into_iter()
            .collect();
        let apate_at = candidates.len();
        candidates.extend(rules.cluster.iter().filter(|r| r.selects(ns, name)));
        for (i, rule) in candidates.iter().enumerate() {
            if i == apate_at {
                if let Some(v) = self.apate(pod, index, resource) {
                    return v;
                }
            }
            if let Some(v) = self.evaluate(rule, pod, container, cname, resource, depth) {
                return v;
            }
        }
        if apate_at == candidates.len() {
            if let Some(v) = self.apate(pod, index, resource) {
                return v;
            }
        }
        match resource {
            Resource::Cpu => fallback.cpu_milli as f64 / 1000.0,
            Resource::Memory => fallback.memory as f64,
        }
    }

    fn apate(&self, pod: &Value, index: usize, resource: Resource) -> Option<f64> {
        let (cpu_milli, memory) = apate_usage(pod, index, &self.faults)?;
        match resource {
            Resource::Cpu => cpu_milli.map(|m| m as f64 / 1000.0),
            Resource::Memory => memory.map(|b| b as f64),
        }
    }

    fn evaluate(
        self: &Arc<Self>,
        rule: &Rule,
        pod: &Value,
        container: &Value,
        cname: &str,
        resource: Resource,
        depth: u8,
    ) -> Option<f64> {
        match rule.source(cname, resource)? {
            Source::Value(v) => Some(*v),
            Source::Expr(e) => {
                let node = self.pod_node(pod);
                let scope = Scope {
                    pod: Some(pod),
                    node: node.as_deref(),
                    container: Some(container),
                };
                match cel::eval_number(e, scope, &self.host(), depth) {
                    Ok(v) => Some(v),
                    Err(err) => {
                        self.report(&rule.object, &rule.id, &err);
                        None
                    }
                }
            }
        }
    }

    pub fn pod_node(&self, pod: &Value) -> Option<Arc<Value>> {
        let node = meta::path(pod, "spec.nodeName").and_then(Value::as_str)?;
        self.nodes.get("", node)
    }

    /// The cached pod, or the error a CEL function reports for it.
    fn pod(&self, namespace: &str, name: &str) -> Result<Arc<Value>, String> {
        self.pods
            .get(namespace, name)
            .ok_or_else(|| format!("no pod {namespace}/{name}"))
    }

    /// Running pods on `node`, in namespace/name order (the cache's).
    pub fn running_pods(&self, node: &str) -> Vec<Arc<Value>> {
        self.pods
            .on_node(node)
            .into_iter()
            .filter(|p| meta::path(p, "status.phase").and_then(Value::as_str) == Some("Running"))
            .collect()
    }

    /// Logs and records an expression's failure the first time it happens.
    pub fn report(&self, object: &Value, id: &str, err: &str) {
        let line = format!("{id}: {err}");
        {
            let mut seen = self.reported.lock();
            if !seen.insert(line.clone()) {
                return;
            }
            if seen.len() > MAX_REPORTED {
                seen.pop_first();
            }
        }
        tracing::warn!(error = %line, "usage expression failed");
        if let Some(r) = &self.recorder {
            r.record(object, EventType::Warning, "ExpressionFailed", line);
        }
    }

    fn pod_rate(
        self: &Arc<Self>,
        pod: &Value,
        resource: Resource,
        container: Option<&str>,
        depth: u8,
    ) -> f64 {
        let base = base_usage(pod);
        containers(pod)
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                container.is_none() || c.get("name").and_then(Value::as_str) == container
            })
            .map(|(i, c)| {
                let fallback = base.get(i).map(|b| b.1).unwrap_or_default();
                self.rate(pod, i, c, resource, fallback, depth)
            })
            .sum()
    }

    fn pod_total(
        self: &Arc<Self>,
        pod: &Value,
        resource: Resource,
        container: Option<&str>,
        now: f64,
        depth: u8,
    ) -> f64 {
        let since = meta::path(pod, "status.startTime")
            .or_else(|| meta::path(pod, "metadata.creationTimestamp"))
            .and_then(Value::as_str)
            .and_then(meta::parse_time)
            .map(seconds)
            .unwrap_or(now);
        let names: Vec<String> = containers(pod)
            .iter()
            .filter_map(|c| c.get("name").and_then(Value::as_str))
            .filter(|n| container.is_none_or(|c| c == *n))
            .map(str::to_string)
            .collect();
        // A pod's total is its containers' totals, so the two agree.
        names
            .into_iter()
            .map(|c| {
                let rate = self.pod_rate(pod, resource, Some(&c), depth);
                let key = Key {
                    namespace: meta::namespace(pod).to_string(),
                    name: meta::name(pod).to_string(),
                    uid: meta::uid(pod).to_string(),
                    container: Some(c),
                    resource,
                };
                self.totals.lock().read(key, now, rate, since, 0.0)
            })
            .sum()
    }

    /// Forgets the totals of pods and nodes that are gone.
    pub fn prune(&self) {
        let pods = self.pods.clone();
        let nodes = self.nodes.clone();
        self.totals.lock().retain(|k| {
            if k.uid.is_empty() {
                nodes.contains("", &k.name)
            } else {
                pods.get(&k.namespace, &k.name)
                    .is_some_and(|p| meta::uid(&p) == k.uid)
            }
        });
    }
}

fn seconds(t: jiff::Timestamp) -> f64 {
    t.as_nanosecond() as f64 / 1e9
}

pub fn containers(pod: &Value) -> &[Value] {
    meta::path(pod, "spec.containers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The model as CEL's host: `Usage()` needs the model behind its `Arc`
/// to evaluate other usage expressions.
struct ModelHost(Arc<Model>);

impl Host for ModelHost {
    fn now(&self) -> f64 {
        seconds(self.0.clock.now())
    }

    fn rand(&self) -> f64 {
        self.0.rng.unit()
    }

    fn usage(
        &self,
        target: &Target,
        resource: Resource,
        container: Option<&str>,
        depth: u8,
    ) -> Result<f64, String> {
        let m = &self.0;
        match target {
            Target::Pod { namespace, name } => {
                let pod = m.pod(namespace, name)?;
                Ok(m.pod_rate(&pod, resource, container, depth))
            }
            Target::Node { name } => Ok(m
                .running_pods(name)
                .iter()
                .map(|p| m.pod_rate(p, resource, None, depth))
                .sum()),
        }
    }

    fn cumulative(
        &self,
        target: &Target,
        resource: Resource,
        container: Option<&str>,
        depth: u8,
    ) -> Result<f64, String> {
        let m = &self.0;
        let now = seconds(m.clock.now());
        match target {
            Target::Pod { namespace, name } => {
                let pod = m.pod(namespace, name)?;
                Ok(m.pod_total(&pod, resource, container, now, depth))
            }
            Target::Node { name } => {
                let pods = m.running_pods(name);
                let rate: f64 = pods
                    .iter()
                    .map(|p| m.pod_rate(p, resource, None, depth))
                    .sum();
                let key = Key {
                    namespace: String::new(),
                    name: name.clone(),
                    uid: String::new(),
                    container: None,
                    resource,
                };
                let known = m.totals.lock().contains(&key);
                // A node seen for the first time starts from what its pods
                // have used so far, so it is never below their sum; then it
                // grows at its own rate and keeps what finished pods used.
                let initial = if known {
                    0.0
                } else {
                    pods.iter()
                        .map(|p| m.pod_total(p, resource, None, now, depth))
                        .sum()
                };
                Ok(m.totals.lock().read(key, now, rate, now, initial))
            }
        }
    }
}
