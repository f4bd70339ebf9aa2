//! The node template: one Node manifest that `--nodes N` stamps out N
//! times. Each copy gets a numbered name, its own InternalIP, its own pod
//! CIDR and, when zones are listed, a zone label in turn.
//!
//! The template is a plain Node (YAML or JSON). Its `metadata.name` is the
//! name prefix; `spec.podCIDR` is the network the per-node /24s are cut
//! from. Three annotations steer the stamping and are not copied:
//! `kubesim.io/zones` (comma-separated zone names), `kubesim.io/node-ip-cidr`
//! (where node addresses come from) and `kubesim.io/pod-cidr-size` (the
//! prefix length of each node's pod CIDR, 24 by default).

use serde_json::{json, Map, Value};

use super::cidr::Net;
use crate::managed::EMULATED;

const ZONES: &str = "kubesim.io/zones";
const NODE_IP_CIDR: &str = "kubesim.io/node-ip-cidr";
const POD_CIDR_SIZE: &str = "kubesim.io/pod-cidr-size";
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// Pod networks by default: far from the service range (10.96.0.0/12),
/// room for 32,768 nodes of 254 pods.
const DEFAULT_POD_NET: &str = "10.128.0.0/9";
const DEFAULT_NODE_NET: &str = "172.16.0.0/12";

/// A parsed template, ready to produce nodes.
#[derive(Debug, Clone)]
pub struct NodeTemplate {
    base: Value,
    prefix: String,
    zones: Vec<String>,
    pod_net: Net,
    pod_cidr_size: u8,
    node_net: Net,
}

impl Default for NodeTemplate {
    /// A node like kwokctl's: 32 cpu, 256 GiB, 110 pods.
    fn default() -> Self {
        Self::from_node(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "kubesim-node", "labels": {"type": "kubesim"}},
            "status": {
                "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "100Gi"},
            },
        }))
        .expect("the built-in node template is valid")
    }
}

impl NodeTemplate {
    /// Reads a template file (YAML or JSON, one Node).
    pub fn from_file(path: &std::path::Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let node: Value = serde_saphyr::from_str(&text)
            .map_err(|e| format!("{} is not a YAML Node: {e}", path.display()))?;
        Self::from_node(node).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn from_node(mut node: Value) -> Result<Self, String> {
        if !node.is_object() {
            return Err("the node template must be an object".into());
        }
        if node.get("kind").and_then(Value::as_str).unwrap_or("Node") != "Node" {
            return Err("the node template must be a Node".into());
        }
        let meta = node
            .as_object_mut()
            .and_then(|o| {
                o.entry("metadata")
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
            })
            .ok_or("metadata must be an object")?;
        let prefix = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("kubesim-node")
            .to_string();
        let mut take = |key: &str| -> Option<String> {
            let ann = meta.get_mut("annotations")?.as_object_mut()?;
            ann.remove(key)?.as_str().map(str::to_string)
        };
        let zones: Vec<String> = take(ZONES)
            .map(|z| {
                z.split(',')
                    .map(str::trim)
                    .filter(|z| !z.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let node_net = Net::parse(&take(NODE_IP_CIDR).unwrap_or(DEFAULT_NODE_NET.into()))?;
        let pod_cidr_size: u8 = match take(POD_CIDR_SIZE) {
            Some(s) => s
                .parse()
                .map_err(|_| format!("{POD_CIDR_SIZE} must be a prefix length, not {s:?}"))?,
            None => 24,
        };
        let pod_net = Net::parse(
            node.pointer("/spec/podCIDR")
                .and_then(Value::as_str)
                .unwrap_or(DEFAULT_POD_NET),
        )?;
        if pod_cidr_size < pod_net.prefix || pod_cidr_size > 30 {
            return Err(format!(
                "{POD_CIDR_SIZE} {pod_cidr_size} does not fit in the pod network {pod_net}"
            ));
        }
        Ok(NodeTemplate {
            base: node,
            prefix,
            zones,
            pod_net,
            pod_cidr_size,
            node_net,
        })
    }

    /// The name of node `i`: the prefix and a five-digit number, so names
    /// sort in creation order.
    pub fn name(&self, i: u64) -> String {
        format!("{}-{i:05}", self.prefix)
    }

    /// Node `i`, ready to create.
    pub fn node(&self, i: u64) -> Value {
        let name = self.name(i);
        let mut node = self.base.clone();
        let obj = node.as_object_mut().expect("checked when parsed");
        obj.insert("apiVersion".into(), json!("v1"));
        obj.insert("kind".into(), json!("Node"));
        let meta = object(obj, "metadata");
        meta.insert("name".into(), json!(name));
        let labels = object(meta, "labels");
        labels.insert("kubernetes.io/hostname".into(), json!(name));
        labels
            .entry("kubernetes.io/os")
            .or_insert_with(|| json!("linux"));
        labels
            .entry("kubernetes.io/arch")
            .or_insert_with(|| json!("amd64"));
        if !self.zones.is_empty() {
            let zone = &self.zones[(i % self.zones.len() as u64) as usize];
            labels.insert(ZONE_LABEL.into(), json!(zone));
        }
        object(meta, "annotations").insert(EMULATED.into(), json!("true"));
        let spec = object(obj, "spec");
        match self.pod_net.subnet(self.pod_cidr_size, i) {
            Some(cidr) => {
                spec.insert("podCIDR".into(), json!(cidr.to_string()));
                spec.insert("podCIDRs".into(), json!([cidr.to_string()]));
            }
            None => {
                spec.remove("podCIDR");
                spec.remove("podCIDRs");
            }
        }
        let status = object(obj, "status");
        let capacity = status.get("capacity").cloned().unwrap_or_else(|| json!({}));
        status.entry("allocatable").or_insert(capacity);
        if let Some(ip) = self.node_net.host(i + 1) {
            status.insert(
                "addresses".into(),
                json!([
                    {"type": "InternalIP", "address": ip.to_string()},
                    {"type": "Hostname", "address": name},
                ]),
            );
        }
        node
    }
}

fn object<'a>(parent: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = parent.entry(key).or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    slot.as_object_mut().expect("just made an object")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_nodes_are_numbered_and_addressed() {
        let t = NodeTemplate::default();
        let n = t.node(257);
        assert_eq!(n["metadata"]["name"], "kubesim-node-00257");
        assert_eq!(
            n["metadata"]["labels"]["kubernetes.io/hostname"],
            "kubesim-node-00257"
        );
        assert_eq!(n["metadata"]["annotations"][EMULATED], "true");
        assert_eq!(n["spec"]["podCIDR"], "10.129.1.0/24");
        assert_eq!(n["status"]["addresses"][0]["address"], "172.16.1.2");
        assert_eq!(n["status"]["allocatable"]["cpu"], "32");
    }

    #[test]
    fn template_annotations_steer_zones_and_networks() {
        let t = NodeTemplate::from_node(json!({
            "metadata": {"name": "gpu", "labels": {"pool": "gpu"}, "annotations": {
                "kubesim.io/zones": "a, b,c", "kubesim.io/node-ip-cidr": "192.168.0.0/16",
                "kubesim.io/pod-cidr-size": "26"}},
            "spec": {"podCIDR": "10.200.0.0/16", "taints": [{"key": "gpu", "effect": "NoSchedule"}]},
            "status": {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "7"}},
        }))
        .unwrap();
        let zones: Vec<String> = (0..4)
            .map(|i| {
                t.node(i)["metadata"]["labels"][ZONE_LABEL]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(zones, ["a", "b", "c", "a"]);
        let n = t.node(5);
        assert_eq!(n["spec"]["podCIDR"], "10.200.1.64/26");
        assert_eq!(n["spec"]["taints"][0]["key"], "gpu");
        assert_eq!(n["status"]["allocatable"]["cpu"], "7");
        assert_eq!(n["status"]["addresses"][0]["address"], "192.168.0.6");
        assert!(n["metadata"]["annotations"].get(ZONES).is_none());
        assert_eq!(n["metadata"]["labels"]["pool"], "gpu");
    }

    #[test]
    fn bad_templates_say_why() {
        assert!(NodeTemplate::from_node(json!({"kind": "Pod"})).is_err());
        assert!(NodeTemplate::from_node(json!([])).is_err());
        let e = NodeTemplate::from_node(json!({"metadata": {"annotations": {
            "kubesim.io/pod-cidr-size": "8"}}}))
        .unwrap_err();
        assert!(e.contains("does not fit"), "{e}");
    }
}
