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

/// The name of the host Batsim takes for the master (its `--master-host`
/// default) when no host has the `role` property `master`.
pub const MASTER_HOST: &str = "master_host";

/// The label that carries a host's speed in flops per second (its first
/// power state's), for profiles whose run time is work over speed.
pub const SPEED_LABEL: &str = "kubesim.io/speed-flops";
/// The label carrying the `<cluster>` a host belongs to, and the links of
/// that cluster (see [`Network`]): every host of one cluster has the same.
pub const NETWORK_LABEL: &str = "kubesim.io/network";

/// A SimGrid `<cluster>`'s links, as [`Network::label`] writes them in a
/// node's [`NETWORK_LABEL`]: each host has a private link (split duplex:
/// what it sends and what it receives do not share), and a backbone, when
/// declared, carries every transfer between two hosts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Network {
    /// Bytes per second of each host's link, each way.
    pub link_bandwidth: f64,
    /// Seconds of latency of each host's link.
    pub link_latency: f64,
    /// The backbone's bytes per second and seconds of latency.
    pub backbone: Option<(f64, f64)>,
}

impl Network {
    fn of(el: roxmltree::Node) -> Option<Network> {
        let bw = el.attribute("bw").and_then(bandwidth_bytes)?;
        let lat = el.attribute("lat").map_or(Some(0.0), latency_seconds)?;
        let backbone = match el.attribute("bb_bw") {
            Some(b) => Some((
                bandwidth_bytes(b)?,
                el.attribute("bb_lat").map_or(Some(0.0), latency_seconds)?,
            )),
            None => None,
        };
        Some(Network {
            link_bandwidth: bw,
            link_latency: lat,
            backbone,
        })
    }

    /// `<cluster>_<bw>_<lat>[_<bb_bw>_<bb_lat>]`, numbers in bytes per
    /// second and seconds.
    fn label(&self, cluster: &str) -> String {
        let mut s = format!(
            "{cluster}_{:e}_{:e}",
            self.link_bandwidth, self.link_latency
        );
        if let Some((b, l)) = self.backbone {
            s.push_str(&format!("_{b:e}_{l:e}"));
        }
        s
    }

    fn from_label(s: &str) -> Option<Network> {
        let parts: Vec<&str> = s.split('_').collect();
        let num = |i: usize| parts.get(i).and_then(|p| p.parse::<f64>().ok());
        Some(Network {
            link_bandwidth: num(1)?,
            link_latency: num(2)?,
            backbone: match parts.len() {
                3 => None,
                5 => Some((num(3)?, num(4)?)),
                _ => return None,
            },
        })
    }
}

/// A SimGrid bandwidth in bytes per second: `1GBps`, `125MBps`, `10Gbps`
/// (bits), `1e9Bps`; binary prefixes (`GiBps`) too.
pub fn bandwidth_bytes(s: &str) -> Option<f64> {
    let (value, unit) = number_and_unit(s)?;
    let (prefix, per_byte) = if let Some(p) = unit.strip_suffix("Bps") {
        (p, 1.0)
    } else if let Some(p) = unit.strip_suffix("bps") {
        (p, 0.125)
    } else {
        return None;
    };
    let scale = match prefix {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        _ => return None,
    };
    Some(value * scale * per_byte).filter(|v| v.is_finite() && *v > 0.0)
}

/// A SimGrid duration in seconds: `5us`, `3ns`, `1ms`, `0.5s`, `2`.
pub fn latency_seconds(s: &str) -> Option<f64> {
    let (value, unit) = number_and_unit(s)?;
    // Divided rather than multiplied by a fraction: `5us` is exactly the
    // double nearest 5e-6.
    let seconds = match unit {
        "" | "s" => value,
        "ms" => value / 1e3,
        "us" => value / 1e6,
        "ns" => value / 1e9,
        "ps" => value / 1e12,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return None,
    };
    Some(seconds).filter(|v| v.is_finite() && *v >= 0.0)
}

/// The longest leading number of `s` and what follows it.
fn number_and_unit(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let digits = s
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+')))
        .unwrap_or(s.len());
    (1..=digits)
        .rev()
        .find_map(|i| Some((s[..i].parse::<f64>().ok()?, s[i..].trim())))
}

/// The links every node's cluster has, when all nodes are hosts of one
/// `<cluster>` whose links are known.
pub fn common_network(nodes: &[Value]) -> Option<Network> {
    let mut labels = nodes.iter().map(|n| {
        n.pointer("/metadata/labels")
            .and_then(|l| l.get(NETWORK_LABEL))
            .and_then(Value::as_str)
    });
    let first = labels.next()??;
    if !labels.all(|l| l == Some(first)) {
        return None;
    }
    Network::from_label(first)
}

/// A SimGrid platform file, parsed.
pub(crate) fn platform_document(text: &str) -> Result<roxmltree::Document<'_>, String> {
    // SimGrid platforms name their DTD; nothing in it is needed here.
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    // An XML declaration must open the document; files often start with
    // a blank line anyway, which Batsim's parser accepts.
    roxmltree::Document::parse_with_options(text.trim_start(), opts)
        .map_err(|e| format!("not a platform file: {e}"))
}

/// The compute hosts of a SimGrid platform, as Batsim finds them: every
/// `<host>` and every host a `<cluster>` declares (prefix, radical,
/// suffix), at any depth of `<zone>`/`<AS>` nesting, less the master host
/// (the one whose `role` property is `master`, or else the one named
/// `master_host`) and storage hosts (`role` `storage`). Each becomes a
/// node of `core` cpus (attribute or property) and `memory` (property,
/// else 4Gi), labelled with its speed. Host names are cut at the first dot.
pub fn from_platform_xml(text: &str) -> Result<Vec<NodeGroup>, String> {
    let doc = platform_document(text)?;
    let mut hosts = Vec::new();
    for node in doc.descendants() {
        if node.has_tag_name("host") {
            let id = node.attribute("id").unwrap_or("host").to_string();
            hosts.push(Host::of(node, id));
        } else if node.has_tag_name("cluster") {
            let prefix = node.attribute("prefix").unwrap_or("");
            let suffix = node.attribute("suffix").unwrap_or("");
            let radical = node.attribute("radical").unwrap_or("");
            let id = node.attribute("id").unwrap_or("cluster");
            let network = Network::of(node).map(|n| n.label(&node_name(id)));
            for i in radical_numbers(radical)? {
                let mut h = Host::of(node, format!("{prefix}{i}{suffix}"));
                h.network = network.clone();
                hosts.push(h);
            }
        }
    }
    let has_master_role = hosts.iter().any(|h| h.role.as_deref() == Some("master"));
    let mut groups = Vec::new();
    for h in hosts {
        let master = match h.role.as_deref() {
            Some("master") => true,
            _ => !has_master_role && h.id == MASTER_HOST,
        };
        if master || h.role.as_deref() == Some("storage") {
            continue;
        }
        let mut labels = std::collections::BTreeMap::new();
        if let Some(speed) = h.speed {
            labels.insert(SPEED_LABEL.to_string(), format!("{speed:.0}"));
        }
        if let Some(n) = &h.network {
            labels.insert(NETWORK_LABEL.to_string(), n.clone());
        }
        groups.push(NodeGroup {
            name: node_name(&h.id),
            count: 1,
            cpu: h.cores,
            memory: h.memory,
            pods: 110,
            labels,
            taints: Vec::new(),
        });
    }
    check(&groups)?;
    Ok(groups)
}

/// What a `<host>` or `<cluster>` element says of one host.
struct Host {
    id: String,
    role: Option<String>,
    cores: String,
    memory: String,
    speed: Option<f64>,
    /// The [`NETWORK_LABEL`] of a `<cluster>`'s host.
    network: Option<String>,
}

impl Host {
    fn of(el: roxmltree::Node, id: String) -> Host {
        let prop = |name: &str| {
            el.children()
                .filter(|c| c.has_tag_name("prop"))
                .find(|c| c.attribute("id") == Some(name))
                .and_then(|c| c.attribute("value"))
        };
        Host {
            id,
            role: prop("role").map(String::from),
            cores: prop("core")
                .or(el.attribute("core"))
                .unwrap_or("1")
                .to_string(),
            memory: prop("memory").unwrap_or("4Gi").to_string(),
            speed: el.attribute("speed").and_then(speed_flops),
            network: None,
        }
    }
}

/// A Kubernetes node name from a SimGrid host id.
pub(crate) fn node_name(id: &str) -> String {
    id.split('.')
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
        .collect()
}

/// A cluster's `radical`: `0-511`, or a comma list of numbers and ranges.
pub(crate) fn radical_numbers(radical: &str) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for part in radical.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("cluster radical {radical:?} is not a list of numbers and ranges");
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u64, u64) = (
                    a.trim().parse().map_err(|_| bad())?,
                    b.trim().parse().map_err(|_| bad())?,
                );
                if b < a || b - a > 1_000_000 {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().map_err(|_| bad())?),
        }
    }
    Ok(out)
}

/// A SimGrid speed in flops per second: `1Gf`, `98.095Mf`, `1e9f`, or a
/// comma list of power states, the first of which is used.
pub fn speed_flops(s: &str) -> Option<f64> {
    let first = s.split(',').next()?.trim();
    let digits = first
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+')))
        .unwrap_or(first.len());
    // `E` may start an exponent or the exa unit (`1Ef`): the longest
    // prefix that reads as a number is the number.
    let (value, unit) = (1..=digits)
        .rev()
        .find_map(|i| Some((first[..i].parse::<f64>().ok()?, &first[i..])))?;
    let scale = match unit.trim() {
        "" | "f" | "flops" => 1.0,
        "kf" | "kflops" => 1e3,
        "Mf" | "Mflops" => 1e6,
        "Gf" | "Gflops" => 1e9,
        "Tf" | "Tflops" => 1e12,
        "Pf" | "Pflops" => 1e15,
        "Ef" | "Eflops" => 1e18,
        "Zf" | "Zflops" => 1e21,
        "Yf" | "Yflops" => 1e24,
        _ => return None,
    };
    Some(value * scale).filter(|v| v.is_finite() && *v > 0.0)
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

/// The speed every node carries in its [`SPEED_LABEL`], when they all
/// carry the same one.
pub fn common_speed(nodes: &[Value]) -> Option<f64> {
    let mut speeds = nodes.iter().map(|n| {
        n.pointer("/metadata/labels")
            .and_then(|l| l.get(SPEED_LABEL))
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<f64>().ok())
    });
    let first = speeds.next()??;
    speeds.all(|s| s == Some(first)).then_some(first)
}

/// The allocatable cpu, in millicores, every node has, if they share one.
pub fn common_cpu_millis(nodes: &[Value]) -> Option<u64> {
    let mut cpus = nodes.iter().map(crate::engine::pods::node_cpu_millis);
    let first = cpus.next()?;
    cpus.all(|c| c == first).then_some(first)
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

    #[test]
    fn clusters_master_host_storage_and_blank_lines() {
        let xml = r#"
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd">
<platform version="4.1"><zone id="AS0" routing="Full">
  <!-- a comment -->
  <cluster id="A" prefix="a" suffix=".x" radical="0-2,5" speed="1Gf" core="4" bw="1GBps" lat="5us"/>
  <cluster id="M" prefix="m" suffix="" radical="0-0" speed="1Gf" bw="1GBps" lat="5us"><prop id="role" value="master"/></cluster>
  <host id="master_host" speed="98.095Mf"/>
  <host id="pfs" speed="1Gf"><prop id="role" value="storage"/></host>
  <zone id="inner" routing="Full"><host id="Jupiter" speed="76.296Mf, 10Mf"/></zone>
</zone></platform>"#;
        let g = from_platform_xml(xml).unwrap();
        let names: Vec<&str> = g.iter().map(|g| g.name.as_str()).collect();
        // A host with role master exists, so master_host computes.
        assert_eq!(names, ["a0", "a1", "a2", "a5", "master-host", "jupiter"]);
        assert_eq!(g[0].cpu, "4");
        assert_eq!(g[0].labels[SPEED_LABEL], "1000000000");
        assert_eq!(g[5].labels[SPEED_LABEL], "76296000");
        let plain = r#"<platform version="4.1"><zone id="z" routing="Full">
            <host id="master_host" speed="1Gf"/><host id="h" speed="1Gf"/></zone></platform>"#;
        let names: Vec<String> = from_platform_xml(plain)
            .unwrap()
            .into_iter()
            .map(|g| g.name)
            .collect();
        assert_eq!(names, ["h"]);
        assert_eq!(speed_flops("98.095Mf"), Some(98_095_000.0));
        assert_eq!(speed_flops("1e9f"), Some(1e9));
        assert_eq!(speed_flops("2Ef"), Some(2e18));
        assert_eq!(speed_flops("fast"), None);
        assert!(radical_numbers("3-1").is_err());
    }
}
