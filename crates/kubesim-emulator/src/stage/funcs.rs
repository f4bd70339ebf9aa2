//! kwok's template functions (`Now`, `NodeIP`, `PodIPsWith`, `YAML`, ...)
//! for the Go templates of Stage steps.

use std::collections::BTreeMap;
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_gocompat::template::kwok;
use kubesim_runtime::{Cache, Clock};
use parking_lot::Mutex;
use serde_json::{json, Value};

use super::ippool::IpPools;
use crate::managed::NodeRule;
use crate::nodes::cidr::Net;
use crate::nodes::fnv1a;
use kubesim_gocompat::template::Funcs;

/// Where pods of a node without a podCIDR get their addresses: the shared
/// address space (4M addresses), clear of the pod CIDRs kubesim hands out.
const FALLBACK_POD_CIDR: &str = "100.64.0.0/10";
/// Where a node without an InternalIP gets one, by a hash of its name.
const FALLBACK_NODE_NET: &str = "172.16.0.0/12";
/// The port every emulated kubelet claims to listen on.
const KUBELET_PORT: u64 = 10250;

/// What the functions read, shared by every render.
pub struct FuncContext {
    pub clock: Clock,
    /// When the emulator started (`StartTime`).
    pub start_time: String,
    /// Every Node, whole (addresses and podCIDRs are read).
    pub nodes: Arc<Cache>,
    pub pools: IpPools,
    /// What each node's object said when last read, by node name: nearly
    /// every pod change and step asks whether its node is emulated and for
    /// its addresses, and parsing the node each time cost more than the
    /// rest of the work.
    facts: Mutex<BTreeMap<String, Arc<NodeFacts>>>,
    /// Which nodes are emulated (sharding aside).
    rule: NodeRule,
}

/// What a node's object says of its addresses and marks, at one
/// resourceVersion.
struct NodeFacts {
    resource_version: String,
    /// Whether the emulator's [`NodeRule`] selects it.
    selected: bool,
    /// Its InternalIPs.
    ips: Vec<String>,
    /// `spec.podCIDRs`, else `spec.podCIDR`.
    pod_cidrs: Vec<String>,
}

impl NodeFacts {
    fn of(node: &Value, rule: &NodeRule) -> Self {
        let ips = meta::path(node, "status.addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|a| a.get("type").and_then(Value::as_str) == Some("InternalIP"))
            .filter_map(|a| a.get("address").and_then(Value::as_str).map(String::from))
            .collect();
        let mut pod_cidrs: Vec<String> = meta::path(node, "spec.podCIDRs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.as_str().map(String::from))
            .collect();
        if pod_cidrs.is_empty() {
            pod_cidrs.extend(
                meta::path(node, "spec.podCIDR")
                    .and_then(Value::as_str)
                    .map(String::from),
            );
        }
        NodeFacts {
            resource_version: meta::resource_version(node).to_string(),
            selected: rule.selects(node),
            ips,
            pod_cidrs,
        }
    }
}

/// The functions for rendering a template over one object.
pub struct KwokFuncs<'a> {
    pub ctx: &'a FuncContext,
    /// The node the object is or runs on ("" when none).
    pub node: &'a str,
}

impl FuncContext {
    pub fn new(clock: Clock, start_time: String, nodes: Arc<Cache>) -> Self {
        FuncContext {
            clock,
            start_time,
            nodes,
            pools: IpPools::default(),
            facts: Mutex::default(),
            rule: NodeRule::default(),
        }
    }

    /// Nodes are emulated when `rule` selects them (marked ones, unless
    /// told otherwise).
    pub fn selecting(mut self, rule: NodeRule) -> Self {
        self.rule = rule;
        self
    }

    /// What the node says, read again only when the node has changed.
    /// The check copies nothing: it runs several times for every step.
    fn facts(&self, node: &str) -> Option<Arc<NodeFacts>> {
        // Taken out first so that the two locks are never held together.
        let known = self.facts.lock().get(node).cloned();
        let current = self.nodes.with_resource_version("", node, |rv| {
            known.as_ref().is_some_and(|f| f.resource_version == rv)
        });
        match current {
            None => {
                if known.is_some() {
                    self.facts.lock().remove(node);
                }
                return None;
            }
            Some(true) => return known,
            Some(false) => {}
        }
        let fresh = Arc::new(NodeFacts::of(&*self.nodes.get("", node)?, &self.rule));
        self.facts.lock().insert(node.to_string(), fresh.clone());
        Some(fresh)
    }

    /// Whether the node exists and the emulator's rule selects it.
    pub fn node_selected(&self, node: &str) -> bool {
        self.facts(node).is_some_and(|f| f.selected)
    }

    /// The InternalIPs a node reports, or one derived from its name.
    pub fn node_ips(&self, node: &str) -> Vec<String> {
        let ips = self.facts(node).map(|a| a.ips.clone()).unwrap_or_default();
        if !ips.is_empty() || node.is_empty() {
            return ips;
        }
        let net = Net::parse(FALLBACK_NODE_NET).expect("a valid constant CIDR");
        let hosts = (1u64 << (32 - net.prefix)) - 3;
        net.host(2 + fnv1a(node) % hosts)
            .map(|ip| vec![ip.to_string()])
            .unwrap_or_default()
    }

    /// The node's pod CIDRs (`spec.podCIDRs`, else `spec.podCIDR`).
    pub fn pod_cidrs(&self, node: &str) -> Vec<String> {
        self.facts(node)
            .map(|a| a.pod_cidrs.clone())
            .unwrap_or_default()
    }

    /// A pod's IPs: its node's for host-network pods, else one from each
    /// of the node's pod CIDRs (IPv4 ones; the fallback pool when none).
    pub fn pod_ips(&self, node: &str, host_network: bool, owner: &str) -> Vec<String> {
        if host_network {
            return self.node_ips(node);
        }
        let mut ips: Vec<String> = self
            .pod_cidrs(node)
            .iter()
            .filter_map(|c| self.pools.assign(c, owner))
            .map(|ip| ip.to_string())
            .collect();
        if ips.is_empty() {
            ips.extend(
                self.pools
                    .assign(FALLBACK_POD_CIDR, owner)
                    .map(|ip| ip.to_string()),
            );
        }
        ips
    }
}

/// The key a pod's addresses are held under: its uid, else its name.
pub fn ip_owner(uid: &str, namespace: &str, name: &str) -> String {
    if uid.is_empty() {
        format!("{namespace}/{name}")
    } else {
        uid.to_string()
    }
}

fn arg_str(args: &[Value], i: usize) -> &str {
    args.get(i).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: Vec<String>) -> Value {
    Value::Array(v.into_iter().map(Value::String).collect())
}

/// kwok's template functions, for an object on `node`: those of the
/// node's name and the time, and those that read other objects (a node's
/// addresses) or hand pod addresses out. None for any other name.
impl Funcs for KwokFuncs<'_> {
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        let (ctx, node) = (self.ctx, self.node);
        let first = |v: Vec<String>| v.into_iter().next().map(Value::String).unwrap_or_default();
        Some(Ok(match name {
            "Now" => Value::String(meta::format_time(ctx.clock.now())),
            "StartTime" => Value::String(ctx.start_time.clone()),
            "Version" => Value::String(env!("CARGO_PKG_VERSION").into()),
            "Quote" => kwok::quote(args.first().unwrap_or(&Value::Null)),
            "YAML" => return Some(kwok::yaml(args)),
            "NodeConditions" => kwok::node_conditions(),
            "NodeName" => Value::String(node.to_string()),
            "NodePort" => json!(KUBELET_PORT),
            "NodeIP" => first(ctx.node_ips(node)),
            "NodeIPWith" => first(ctx.node_ips(arg_str(args, 0))),
            "NodeIPsWith" => strings(ctx.node_ips(arg_str(args, 0))),
            "PodIPWith" | "PodIPsWith" => {
                let host = args.get(1).and_then(Value::as_bool).unwrap_or(false);
                let owner = ip_owner(arg_str(args, 2), arg_str(args, 4), arg_str(args, 3));
                let ips = ctx.pod_ips(arg_str(args, 0), host, &owner);
                if name == "PodIPWith" {
                    first(ips)
                } else {
                    strings(ips)
                }
            }
            "PodIP" => first(ctx.pod_ips(node, false, &ctx.clock.now().to_string())),
            _ => return None,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(nodes: Vec<Value>) -> FuncContext {
        let cache = Arc::new(Cache::default());
        for n in nodes {
            cache.upsert(n);
        }
        FuncContext::new(
            Clock::simulated("2026-01-01T00:00:00Z".parse().unwrap()),
            "2026-01-01T00:00:00Z".into(),
            cache,
        )
    }

    #[test]
    fn node_and_pod_addresses() {
        let c = ctx(vec![json!({"metadata": {"name": "n1"},
            "spec": {"podCIDR": "10.128.3.0/24"},
            "status": {"addresses": [{"type": "InternalIP", "address": "172.16.0.9"},
                                     {"type": "Hostname", "address": "n1"}]}})]);
        let f = KwokFuncs {
            ctx: &c,
            node: "n1",
        };
        let call = |n: &str, a: &[Value]| f.call(n, a).unwrap().unwrap();
        assert_eq!(call("NodeIP", &[]), json!("172.16.0.9"));
        assert_eq!(call("NodeIPsWith", &[json!("n1")]), json!(["172.16.0.9"]));
        let args = [
            json!("n1"),
            json!(false),
            json!("uid-1"),
            json!("p"),
            json!("ns"),
        ];
        assert_eq!(call("PodIPsWith", &args), json!(["10.128.3.2"]));
        assert_eq!(call("PodIPWith", &args), json!("10.128.3.2"));
        let other = [
            json!("n1"),
            json!(false),
            json!("uid-2"),
            json!("q"),
            json!("ns"),
        ];
        assert_eq!(call("PodIPWith", &other), json!("10.128.3.3"));
        let host = [
            json!("n1"),
            json!(true),
            json!("uid-3"),
            json!("h"),
            json!("ns"),
        ];
        assert_eq!(call("PodIPWith", &host), json!("172.16.0.9"));
        // An unknown node gets a stable address from its name.
        let a = call("NodeIPWith", &[json!("ghost")]);
        assert_eq!(a, call("NodeIPWith", &[json!("ghost")]));
        assert!(a.as_str().unwrap().starts_with("172."));
        assert!(f.call("Nope", &[]).is_none());
    }

    #[test]
    fn quote_yaml_and_conditions() {
        let c = ctx(vec![]);
        let f = KwokFuncs { ctx: &c, node: "" };
        let call = |n: &str, a: &[Value]| f.call(n, a).unwrap().unwrap();
        assert_eq!(call("Quote", &[json!("a\"b")]), json!("\"a\\\"b\""));
        assert_eq!(call("Quote", &[json!(5)]), json!("\"5\""));
        assert_eq!(
            call("YAML", &[json!({"cpu": "1", "pods": "110"}), json!(1)]),
            json!("  cpu: \"1\"\n  pods: \"110\"")
        );
        assert_eq!(call("NodeConditions", &[]).as_array().unwrap().len(), 5);
        assert_eq!(call("Now", &[]), json!("2026-01-01T00:00:00Z"));
    }
}
