//! The simulated cluster's nodes: groups from a cluster file, the hosts of
//! a Batsim (SimGrid) platform, or N identical nodes.

use serde::Deserialize;
use serde_json::{json, Map, Value};

/// Nodes alike: count, size, labels and taints.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeGroup {
    pub name: String,
    #[serde(default = "one")]
    pub count: u32,
    pub cpu: String,
    pub memory: String,
    #[serde(default = "default_pods")]
    pub pods: u32,
    #[serde(default)]
    pub labels: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub taints: Vec<Value>,
}

fn one() -> u32 {
    1
}

fn default_pods() -> u32 {
    110
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClusterFile {
    node_groups: Vec<NodeGroup>,
}

impl NodeGroup {
    /// The group's Node objects, named `<name>-<i>` (the name alone for a
    /// group of one).
    pub fn nodes(&self) -> Vec<Value> {
        (0..self.count)
            .map(|i| {
                let name = if self.count == 1 {
                    self.name.clone()
                } else {
                    format!("{}-{i}", self.name)
                };
                let mut labels: Map<String, Value> = self
                    .labels
                    .iter()
                    .map(|(k, v)| (k.clone(), json!(v)))
                    .collect();
                labels.insert("kubernetes.io/hostname".into(), json!(name));
                labels.insert("kubernetes.io/os".into(), json!("linux"));
                labels.insert("kubernetes.io/arch".into(), json!("amd64"));
                let resources = json!({"cpu": self.cpu, "memory": self.memory,
                    "pods": self.pods.to_string()});
                json!({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": labels},
                    "spec": {"taints": self.taints},
                    "status": {"capacity": resources, "allocatable": resources}})
            })
            .collect()
    }
}

fn check(groups: &[NodeGroup]) -> Result<(), String> {
    if groups.iter().map(|g| g.count as u64).sum::<u64>() == 0 {
        return Err("the cluster has no nodes".into());
    }
    for g in groups {
        for (what, q) in [("cpu", &g.cpu), ("memory", &g.memory)] {
            kubesim_core::quantity::Quantity::parse(q)
                .map_err(|_| format!("node group {}: {what} {q:?} is not a quantity", g.name))?;
        }
    }
    Ok(())
}

/// A cluster file: `nodeGroups: [{name, count, cpu, memory, pods, labels, taints}]`.
pub fn from_yaml(text: &str) -> Result<Vec<NodeGroup>, String> {
    let f: ClusterFile =
        serde_saphyr::from_str(text).map_err(|e| format!("not a cluster file: {e}"))?;
    check(&f.node_groups)?;
    Ok(f.node_groups)
}

/// The compute hosts of a SimGrid platform as nodes of `core` cpus and
/// `memory` (host properties), skipping hosts whose role is `master`, as
/// Batsim does. Host names are cut at the first dot.
pub fn from_platform_xml(text: &str) -> Result<Vec<NodeGroup>, String> {
    // SimGrid platforms name their DTD; nothing in it is needed here.
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, opts)
        .map_err(|e| format!("not a platform file: {e}"))?;
    let mut groups = Vec::new();
    for host in doc.descendants().filter(|n| n.has_tag_name("host")) {
        let prop = |id: &str| {
            host.children()
                .filter(|c| c.has_tag_name("prop"))
                .find(|c| c.attribute("id") == Some(id))
                .and_then(|c| c.attribute("value"))
        };
        if prop("role") == Some("master") {
            continue;
        }
        let id = host.attribute("id").unwrap_or("host");
        let name: String = id
            .split('.')
            .next()
            .unwrap_or(id)
            .to_ascii_lowercase()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let cores = prop("core").or(host.attribute("core")).unwrap_or("1");
        groups.push(NodeGroup {
            name,
            count: 1,
            cpu: cores.to_string(),
            memory: prop("memory").unwrap_or("4Gi").to_string(),
            pods: 110,
            labels: Default::default(),
            taints: Vec::new(),
        });
    }
    check(&groups)?;
    Ok(groups)
}

/// `--nodes N --node-cpu C --node-memory M`.
pub fn uniform(count: u32, cpu: &str, memory: &str) -> Result<Vec<NodeGroup>, String> {
    let g = vec![NodeGroup {
        name: "node".into(),
        count,
        cpu: cpu.into(),
        memory: memory.into(),
        pods: 110,
        labels: Default::default(),
        taints: Vec::new(),
    }];
    check(&g)?;
    Ok(g)
}

pub fn nodes(groups: &[NodeGroup]) -> Vec<Value> {
    groups.iter().flat_map(NodeGroup::nodes).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_become_nodes() {
        let g = from_yaml(
            "nodeGroups:
- {name: cpu, count: 2, cpu: '8', memory: 32Gi, labels: {tier: a}}
- {name: gpu, cpu: '4', memory: 16Gi, taints: [{key: gpu, effect: NoSchedule}]}
",
        )
        .unwrap();
        let n = nodes(&g);
        let names: Vec<&str> = n
            .iter()
            .map(|n| n["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["cpu-0", "cpu-1", "gpu"]);
        assert_eq!(n[0]["metadata"]["labels"]["tier"], "a");
        assert_eq!(n[2]["spec"]["taints"][0]["key"], "gpu");
        assert_eq!(n[1]["status"]["allocatable"]["cpu"], "8");
        assert!(from_yaml("nodeGroups: []").is_err());
        assert!(from_yaml("nodeGroups: [{name: x, cpu: lots, memory: 1Gi}]").is_err());
        assert!(from_yaml("nodes: 3").is_err());
    }

    #[test]
    fn platform_hosts_without_the_master() {
        let xml = r#"<?xml version='1.0'?><!DOCTYPE platform SYSTEM "http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd"><platform version="4.1"><AS id="a" routing="Full">
            <host id="h-0.site" speed="1f"><prop id="core" value="1"/><prop id="role" value="master"/></host>
            <host id="h-1.site" speed="1f"><prop id="core" value="6"/><prop id="memory" value="4Gi"/></host>
            </AS></platform>"#;
        let g = from_platform_xml(xml).unwrap();
        assert_eq!(g.len(), 1);
        assert_eq!(
            (g[0].name.as_str(), g[0].cpu.as_str(), g[0].memory.as_str()),
            ("h-1", "6", "4Gi")
        );
        assert!(from_platform_xml("<platform/>").is_err());
        assert!(from_platform_xml("not xml").is_err());
    }
}
