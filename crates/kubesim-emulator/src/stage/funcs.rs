//! kwok's template functions (`Now`, `NodeIP`, `PodIPsWith`, `YAML`, ...)
//! for the Go templates of Stage steps.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
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
        self.pod_ips_by(node, host_network, owner, IpPools::assign)
    }

    /// [`pod_ips`](Self::pod_ips), with `pick` handing out each address
    /// (or only saying which it would).
    fn pod_ips_by(&self, node: &str, host_network: bool, owner: &str, pick: Pick) -> Vec<String> {
        if host_network {
            return self.node_ips(node);
        }
        let mut ips: Vec<String> = self
            .pod_cidrs(node)
            .iter()
            .filter_map(|c| pick(&self.pools, c, owner))
            .map(|ip| ip.to_string())
            .collect();
        if ips.is_empty() {
            ips.extend(pick(&self.pools, FALLBACK_POD_CIDR, owner).map(|ip| ip.to_string()));
        }
        ips
    }
}

/// How a pod's address is picked from a pool: [`IpPools::assign`], or
/// [`IpPools::peek`] for a guess.
type Pick = fn(&IpPools, &str, &str) -> Option<Ipv4Addr>;

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

/// kwok's functions whose answers depend on nothing but their arguments,
/// the node's name, the time and the start time: a render made ahead of
/// time may call these. None for any other name.
fn known_ahead(
    name: &str,
    args: &[Value],
    node: &str,
    now: impl FnOnce() -> String,
    start_time: &str,
) -> Option<Result<Value, String>> {
    Some(Ok(match name {
        "Now" => Value::String(now()),
        "StartTime" => Value::String(start_time.to_string()),
        "Version" => Value::String(env!("CARGO_PKG_VERSION").into()),
        "Quote" => kwok::quote(args.first().unwrap_or(&Value::Null)),
        "YAML" => return Some(kwok::yaml(args)),
        "NodeConditions" => kwok::node_conditions(),
        "NodeName" => Value::String(node.to_string()),
        "NodePort" => json!(KUBELET_PORT),
        _ => return None,
    }))
}

/// kwok's functions that read other objects (a node's addresses) or hand
/// addresses out: a render made ahead of time can only guess at them.
const READING: [&str; 6] = [
    "NodeIP",
    "NodeIPWith",
    "NodeIPsWith",
    "PodIPWith",
    "PodIPsWith",
    "PodIP",
];

/// The answer of one of the [`READING`] functions, for an object on
/// `node`, with `pick` handing out pod addresses. None for any other name.
fn reading(ctx: &FuncContext, node: &str, name: &str, args: &[Value], pick: Pick) -> Option<Value> {
    let first = |v: Vec<String>| v.into_iter().next().map(Value::String).unwrap_or_default();
    Some(match name {
        "NodeIP" => first(ctx.node_ips(node)),
        "NodeIPWith" => first(ctx.node_ips(arg_str(args, 0))),
        "NodeIPsWith" => strings(ctx.node_ips(arg_str(args, 0))),
        "PodIPWith" | "PodIPsWith" => {
            let host = args.get(1).and_then(Value::as_bool).unwrap_or(false);
            let owner = ip_owner(arg_str(args, 2), arg_str(args, 4), arg_str(args, 3));
            let ips = ctx.pod_ips_by(arg_str(args, 0), host, &owner, pick);
            if name == "PodIPWith" {
                first(ips)
            } else {
                strings(ips)
            }
        }
        "PodIP" => first(ctx.pod_ips_by(node, false, &ctx.clock.now().to_string(), pick)),
        _ => return None,
    })
}

impl Funcs for KwokFuncs<'_> {
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        let ctx = self.ctx;
        let now = || meta::format_time(ctx.clock.now());
        known_ahead(name, args, self.node, now, &ctx.start_time)
            .or_else(|| reading(ctx, self.node, name, args, IpPools::assign).map(Ok))
    }
}

/// The functions for a render made ahead of time, as it would be made at
/// `now`: kwok's functions of the object, its node's name and the time
/// answer exactly; the `READING` ones answer with a guess from what
/// `guess_from` holds now (or fail without it), and each guess is kept,
/// for the render to be checked against when due.
pub struct AheadFuncs {
    pub node: String,
    /// `Now`, as formatted.
    pub now: String,
    pub start_time: String,
    pub guess_from: Option<Arc<FuncContext>>,
    pub guessed: RefCell<Vec<Guess>>,
}

/// A call of one of the `READING` functions by a render made ahead of
/// time, with the answer guessed for it.
#[derive(Debug)]
pub struct Guess {
    name: String,
    args: Vec<Value>,
    answer: Value,
}

impl Guess {
    /// Whether the function, called when due, gives the answer guessed.
    /// The call hands out what the render made then would: checking a
    /// render's guesses in order, up to the first that fails, does what
    /// the render would have done up to there, and each of these
    /// functions answers an owner the same when asked again.
    pub fn holds(&self, due: &KwokFuncs) -> bool {
        matches!(due.call(&self.name, &self.args), Some(Ok(v)) if v == self.answer)
    }
}

impl Funcs for AheadFuncs {
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        let now = || self.now.clone();
        if let Some(answer) = known_ahead(name, args, &self.node, now, &self.start_time) {
            return Some(answer);
        }
        if !READING.contains(&name) {
            return None;
        }
        let Some(ctx) = &self.guess_from else {
            return Some(Err(format!("{name} is not known ahead of time")));
        };
        let answer = reading(ctx, &self.node, name, args, IpPools::peek)?;
        self.guessed.borrow_mut().push(Guess {
            name: name.to_string(),
            args: args.to_vec(),
            answer: answer.clone(),
        });
        Some(Ok(answer))
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

    #[test]
    fn ahead_of_time_only_the_functions_of_the_object_node_name_and_time_answer() {
        let c = ctx(vec![json!({"metadata": {"name": "n1"},
            "status": {"addresses": [{"type": "InternalIP", "address": "172.16.0.9"}]}})]);
        let due = KwokFuncs {
            ctx: &c,
            node: "n1",
        };
        let ahead = AheadFuncs {
            node: "n1".into(),
            now: "2026-01-01T00:00:00Z".into(),
            start_time: c.start_time.clone(),
            guess_from: None,
            guessed: RefCell::default(),
        };
        let args = [json!({"cpu": "1"}), json!(2)];
        for name in [
            "Now",
            "StartTime",
            "Version",
            "Quote",
            "YAML",
            "NodeConditions",
            "NodeName",
            "NodePort",
        ] {
            assert_eq!(ahead.call(name, &args), due.call(name, &args), "{name}");
            assert!(due.call(name, &args).unwrap().is_ok(), "{name}");
        }
        for name in READING {
            assert!(due.call(name, &[json!("n1")]).is_some(), "{name}");
            assert!(ahead.call(name, &[json!("n1")]).unwrap().is_err(), "{name}");
        }
        // Names kwok does not define are left to the built-ins by both.
        assert!(ahead.call("list", &[]).is_none());
        assert!(due.call("list", &[]).is_none());
    }

    #[test]
    fn guesses_at_addresses_hold_while_nothing_changes_and_hand_out_what_a_render_when_due_would() {
        let node = json!({"metadata": {"name": "n1"}, "spec": {"podCIDR": "10.128.3.0/24"},
            "status": {"addresses": [{"type": "InternalIP", "address": "172.16.0.9"}]}});
        let c = Arc::new(ctx(vec![node]));
        let ahead = AheadFuncs {
            node: "n1".into(),
            now: "2026-01-01T00:00:00Z".into(),
            start_time: c.start_time.clone(),
            guess_from: Some(c.clone()),
            guessed: RefCell::default(),
        };
        let pod = |uid: &str| {
            [
                json!("n1"),
                json!(false),
                json!(uid),
                json!("p"),
                json!("ns"),
            ]
        };
        assert_eq!(ahead.call("NodeIP", &[]).unwrap(), Ok(json!("172.16.0.9")));
        assert_eq!(
            ahead.call("PodIPsWith", &pod("uid-1")).unwrap(),
            Ok(json!(["10.128.3.2"]))
        );
        let guessed = ahead.guessed.into_inner();
        assert_eq!(guessed.len(), 2);
        // A guess hands nothing out: the address is still free.
        assert_eq!(
            c.pools.peek("10.128.3.0/24", "other").unwrap().to_string(),
            "10.128.3.2"
        );
        let due = KwokFuncs {
            ctx: &c,
            node: "n1",
        };
        assert!(guessed.iter().all(|g| g.holds(&due)));
        // Checking handed the address out, as the render when due would.
        assert_eq!(
            due.call("PodIPsWith", &pod("uid-1")).unwrap(),
            Ok(json!(["10.128.3.2"]))
        );
        assert_eq!(
            due.call("PodIPsWith", &pod("uid-2")).unwrap(),
            Ok(json!(["10.128.3.3"]))
        );

        // Another pod took the address guessed meanwhile: the guess fails.
        let ahead = AheadFuncs {
            guess_from: Some(c.clone()),
            guessed: RefCell::default(),
            ..ahead
        };
        assert_eq!(
            ahead.call("PodIPWith", &pod("uid-4")).unwrap(),
            Ok(json!("10.128.3.4"))
        );
        due.call("PodIPWith", &pod("uid-3")).unwrap().unwrap();
        assert!(ahead.call("Nope", &[]).is_none());
        let guessed = ahead.guessed.into_inner();
        assert!(!guessed[0].holds(&due));
    }
}
