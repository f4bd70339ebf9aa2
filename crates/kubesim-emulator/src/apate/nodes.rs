//! NodeConfiguration: keeps `replicas` emulated nodes per configuration and
//! puts its direct state and due tasks in force on them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::{meta, ApiError};
use kubesim_runtime::{
    Api, Cache, Clock, DeleteOptions, EventRecorder, EventType, ObjectKey, Requeue, ResourceRef,
    WriteOptions,
};
use parking_lot::Mutex;
use serde_json::{json, Value};

use super::faults::Faults;
use super::schedule::due;
use super::types::{
    bytes_quantity, parse_spec, NodeConfigurationSpec, NodeEffect, NodeState, Task,
};
use crate::nodes::NodeTemplate;

pub const NAME_LABEL: &str = "apate-name";
pub const NAMESPACE_LABEL: &str = "apate-namespace";
pub const UUID_LABEL: &str = "apate-uuid";

pub struct NodeConfigurations {
    pub api: Arc<dyn Api>,
    pub clock: Clock,
    pub faults: Arc<Faults>,
    pub recorder: EventRecorder,
    pub configs: Arc<Cache>,
    pub nodes: Arc<Cache>,
    /// Tasks already announced per configuration, so each fires one event.
    pub announced: Mutex<BTreeMap<ObjectKey, usize>>,
}

impl NodeConfigurations {
    pub async fn reconcile(&self, key: ObjectKey) -> Result<Requeue, ApiError> {
        let owned = self.owned_nodes(&key);
        let Some(nc) = self.configs.get(&key.namespace, &key.name) else {
            for name in owned.keys() {
                self.faults.set_node(name, None);
                self.delete_node(name).await?;
            }
            self.announced.lock().remove(&key);
            return Ok(None);
        };
        let spec: NodeConfigurationSpec = match parse_spec(&nc) {
            Ok(s) => s,
            Err(e) => {
                self.recorder
                    .record(&nc, EventType::Warning, "InvalidSpec", e);
                return Ok(None);
            }
        };
        let template = match self.template(&nc, &spec) {
            Ok(t) => t,
            Err(e) => {
                self.recorder
                    .record(&nc, EventType::Warning, "InvalidSpec", e);
                return Ok(None);
            }
        };
        let replicas = spec.replicas.max(0) as u64;
        // The state in force: direct, then every due task in order.
        let now = self.clock.now();
        let (fired, next) = due(&spec.tasks, self.faults.scenario_start(), None, now);
        let mut effect = NodeEffect::default();
        spec.direct.apply(&mut effect);
        for t in &fired {
            t.state.apply(&mut effect);
        }
        self.announce(&key, &nc, &fired);
        for i in 0..replicas {
            let name = template.name(i);
            self.faults.set_node(&name, Some(effect.clone()));
            if !owned.contains_key(&name) {
                match self
                    .api
                    .create(
                        &ResourceRef::core("nodes"),
                        "",
                        template.node(i),
                        &WriteOptions::default(),
                    )
                    .await
                {
                    Ok(_) => {}
                    Err(e) if e.code == 409 => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let wanted: Vec<String> = (0..replicas).map(|i| template.name(i)).collect();
        for name in owned.keys().filter(|n| !wanted.contains(n)) {
            self.faults.set_node(name, None);
            self.delete_node(name).await?;
        }
        Ok(next.map(|at| Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO)))
    }

    fn announce(&self, key: &ObjectKey, nc: &Value, fired: &[&Task<NodeState>]) {
        let mut announced = self.announced.lock();
        let before = announced.insert(key.clone(), fired.len()).unwrap_or(0);
        for t in fired.iter().skip(before) {
            let state = serde_json::to_string(&describe(&t.state)).unwrap_or_default();
            self.recorder.record(
                nc,
                EventType::Normal,
                "ScenarioTask",
                format!("task at {} applied to the nodes: {state}", t.timestamp),
            );
        }
    }

    /// This configuration's nodes, by name.
    fn owned_nodes(&self, key: &ObjectKey) -> BTreeMap<String, Arc<Value>> {
        self.nodes
            .list()
            .into_iter()
            .filter(|n| {
                let labels = meta::labels(n);
                labels.get(NAME_LABEL) == Some(&key.name)
                    && labels.get(NAMESPACE_LABEL) == Some(&key.namespace)
            })
            .map(|n| (meta::name(&n).to_string(), n))
            .collect()
    }

    async fn delete_node(&self, name: &str) -> Result<(), ApiError> {
        match self
            .api
            .delete(
                &ResourceRef::core("nodes"),
                "",
                name,
                &DeleteOptions::default(),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Nodes as Apate registers them: labelled `emulated=yes` and with the
    /// configuration's identity, tainted `emulated:NoSchedule`, sized by
    /// `resources` (sizes binary, cpu in cores).
    fn template(&self, nc: &Value, spec: &NodeConfigurationSpec) -> Result<NodeTemplate, String> {
        let r = &spec.resources;
        let (ns, name) = (meta::namespace(nc), meta::name(nc));
        let prefix = if ns == "default" {
            name.to_string()
        } else {
            format!("{ns}-{name}")
        };
        let capacity = json!({
            "cpu": r.cpu.to_string(),
            "memory": bytes_quantity(&r.memory)?,
            "ephemeral-storage": bytes_quantity(&r.ephemeral_storage)?,
            "pods": r.max_pods.to_string(),
        });
        NodeTemplate::from_node(json!({
            "metadata": {"name": prefix, "labels": {
                "emulated": "yes", NAME_LABEL: name, NAMESPACE_LABEL: ns, UUID_LABEL: meta::uid(nc)}},
            "spec": {"taints": [{"key": "emulated", "effect": "NoSchedule"}]},
            "status": {"capacity": capacity},
        }))
    }
}

/// A task's state as its YAML said it, for the event message.
fn describe(s: &NodeState) -> Value {
    let mut m = serde_json::Map::new();
    if let Some(v) = s.node_failed {
        m.insert("node_failed".into(), json!(v));
    }
    if let Some(v) = s.heartbeat_failed {
        m.insert("heartbeat_failed".into(), json!(v));
    }
    if let Some(v) = &s.network_latency {
        m.insert("network_latency".into(), json!(v));
    }
    if s.custom_state.is_some() {
        m.insert("custom_state".into(), json!("set"));
    }
    Value::Object(m)
}
