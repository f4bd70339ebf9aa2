//! A platform's hosts, links and routes, for parallel tasks whose run time
//! depends on the hosts they are placed on.
//!
//! What is read of a SimGrid v4 platform:
//! - every compute host's speed (its first power state), by node name;
//! - `<link>`s: bandwidth, latency and `sharing_policy` (`SHARED`, the
//!   default; `FATPIPE`, where each flow has the whole bandwidth;
//!   `SPLITDUPLEX`, two links `<id>_UP` and `<id>_DOWN`);
//! - `<route src dst>`s listing `<link_ctn id [direction]>`, the way back
//!   taking the same links in reverse (and the other direction of a split
//!   link) unless `symmetrical="NO"`;
//! - each `<cluster>`: a private link per host (split duplex unless its
//!   `sharing_policy` says otherwise), a `limiter_link` per host, and its
//!   backbone, if any; a route between two of its hosts crosses the
//!   sender's limiter and link, the backbone, and the receiver's link and
//!   limiter;
//! - `<zoneRoute>`s between two clusters: from one's backbone to the
//!   other's, through the zone route's links.
//!
//! Routing computed from a graph (`Floyd`, `Dijkstra`) and zone routes
//! between other zones are not derived: a pair of hosts without a route
//! has none, and a task that would send between them is not timed.

use std::collections::BTreeMap;

use crate::cluster::{bandwidth_bytes, latency_seconds, node_name, speed_flops};

/// One link: what it carries per second, its latency, and whether flows
/// share it.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub bandwidth: f64,
    pub latency: f64,
    /// FATPIPE: every flow gets the whole bandwidth, none waits for another.
    pub fatpipe: bool,
}

/// The compute hosts' speeds and the routes between hosts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Platform {
    speeds: BTreeMap<String, f64>,
    /// Compute hosts the platform gives no speed.
    unspeeded: Vec<String>,
    links: Vec<Link>,
    /// Routes declared by `<route>`, by (source, destination).
    routes: BTreeMap<(String, String), Vec<usize>>,
    /// Each `<cluster>` host's place: its cluster and its link each way.
    /// A route inside a cluster is made when asked for, not stored: a
    /// cluster of `n` hosts has `n (n - 1)` of them.
    ports: BTreeMap<String, Port>,
    /// Each cluster's backbone, if it has one.
    backbones: Vec<Option<usize>>,
    /// Each cluster's index, by its id.
    cluster_ids: BTreeMap<String, usize>,
    /// Routes declared by `<zoneRoute>` between two clusters' routers.
    zone_routes: BTreeMap<(usize, usize), Vec<usize>>,
    /// Whether every ordered pair of distinct compute hosts has a route.
    every_pair: bool,
}

/// A `<cluster>` host's cluster and private links (up, down).
#[derive(Debug, Clone, PartialEq)]
struct Port {
    cluster: usize,
    links: Option<(usize, usize)>,
    /// The host's `limiter_link`, crossed both ways.
    limiter: Option<usize>,
}

impl Platform {
    /// Reads `text`, a SimGrid platform; `compute` names the hosts that
    /// are nodes (the master and storage hosts are not).
    pub fn from_xml(text: &str, compute: &[String]) -> Result<Platform, String> {
        let doc = crate::cluster::platform_document(text)?;
        let mut p = Platform::default();
        let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
        let wanted: std::collections::BTreeSet<&str> = compute.iter().map(String::as_str).collect();
        let mut add_link = |p: &mut Platform, id: String, link: Link| {
            by_id.insert(id, p.links.len());
            p.links.push(link);
            p.links.len() - 1
        };
        // Links and hosts first: a route may name a link declared after it.
        for el in doc.descendants() {
            if el.has_tag_name("host") {
                let name = node_name(el.attribute("id").unwrap_or("host"));
                if let Some(s) = el.attribute("speed").and_then(speed_flops) {
                    if wanted.contains(name.as_str()) {
                        p.speeds.insert(name, s);
                    }
                }
            } else if el.has_tag_name("link") {
                let id = el.attribute("id").unwrap_or_default().to_string();
                let link = link_of(el, "bandwidth", "latency")
                    .ok_or_else(|| format!("link {id:?}: bad bandwidth or latency"))?;
                match el.attribute("sharing_policy").unwrap_or("SHARED") {
                    "SPLITDUPLEX" => {
                        add_link(&mut p, format!("{id}_UP"), link.clone());
                        add_link(&mut p, format!("{id}_DOWN"), link);
                    }
                    policy => {
                        let fatpipe = policy == "FATPIPE";
                        add_link(&mut p, id, Link { fatpipe, ..link });
                    }
                }
            } else if el.has_tag_name("cluster") {
                p.add_cluster(el, &wanted, &mut add_link)?;
            }
        }
        p.unspeeded = compute
            .iter()
            .filter(|c| !p.speeds.contains_key(*c))
            .cloned()
            .collect();
        for el in doc
            .descendants()
            .filter(|e| e.has_tag_name("route") || e.has_tag_name("zoneRoute"))
        {
            let (Some(src), Some(dst)) = (el.attribute("src"), el.attribute("dst")) else {
                continue;
            };
            let zones = el.has_tag_name("zoneRoute");
            let (src, dst) = if zones {
                (src.to_string(), dst.to_string())
            } else {
                (node_name(src), node_name(dst))
            };
            let mut there = Vec::new();
            let mut back = Vec::new();
            for ctn in el.children().filter(|c| c.has_tag_name("link_ctn")) {
                let id = ctn.attribute("id").unwrap_or_default();
                let dir = ctn.attribute("direction");
                let find = |name: &str| {
                    by_id
                        .get(name)
                        .copied()
                        .ok_or_else(|| format!("route {src} -> {dst}: no link {name:?}"))
                };
                match dir {
                    Some("UP") => {
                        there.push(find(&format!("{id}_UP"))?);
                        back.push(find(&format!("{id}_DOWN"))?);
                    }
                    Some("DOWN") => {
                        there.push(find(&format!("{id}_DOWN"))?);
                        back.push(find(&format!("{id}_UP"))?);
                    }
                    _ => {
                        let l = find(id)?;
                        there.push(l);
                        back.push(l);
                    }
                }
            }
            back.reverse();
            let symmetrical = !matches!(el.attribute("symmetrical"), Some("NO" | "no"));
            if zones {
                // Between two clusters (other zones are not derived).
                let (Some(&a), Some(&b)) = (p.cluster_ids.get(&src), p.cluster_ids.get(&dst))
                else {
                    continue;
                };
                if symmetrical {
                    p.zone_routes.entry((b, a)).or_insert(back);
                }
                p.zone_routes.insert((a, b), there);
                continue;
            }
            if symmetrical {
                p.routes.entry((dst.clone(), src.clone())).or_insert(back);
            }
            p.routes.insert((src, dst), there);
        }
        p.every_pair = p.count_every_pair(compute);
        Ok(p)
    }

    /// Whether every ordered pair of distinct `compute` hosts has a
    /// route: the pairs outside one cluster are as many as the declared
    /// routes between such pairs.
    fn count_every_pair(&self, compute: &[String]) -> bool {
        let n = compute.len();
        let mut per_cluster: BTreeMap<usize, usize> = BTreeMap::new();
        for h in compute {
            if let Some(port) = self.ports.get(h) {
                *per_cluster.entry(port.cluster).or_default() += 1;
            }
        }
        let inside: usize = per_cluster.values().map(|k| k * (k - 1)).sum();
        let between: usize = self
            .zone_routes
            .keys()
            .filter(|(a, b)| a != b)
            .map(|(a, b)| {
                per_cluster.get(a).copied().unwrap_or(0) * per_cluster.get(b).copied().unwrap_or(0)
            })
            .sum();
        let needed = n * n.saturating_sub(1) - inside - between;
        let wanted: std::collections::BTreeSet<&str> = compute.iter().map(String::as_str).collect();
        let declared = self
            .routes
            .keys()
            .filter(|(a, b)| {
                a != b
                    && wanted.contains(a.as_str())
                    && wanted.contains(b.as_str())
                    && !self.cluster_route(a, b)
            })
            .count();
        declared == needed
    }

    /// Whether `a` and `b` are routed through clusters: the same one, or
    /// two with a zone route.
    fn cluster_route(&self, a: &str, b: &str) -> bool {
        match (self.ports.get(a), self.ports.get(b)) {
            (Some(x), Some(y)) => {
                x.cluster == y.cluster || self.zone_routes.contains_key(&(x.cluster, y.cluster))
            }
            _ => false,
        }
    }

    /// The links from `a` to `b`: a declared route, else the way through
    /// their cluster.
    fn route(&self, a: &str, b: &str) -> Option<Vec<usize>> {
        if let Some(r) = self.routes.get(&(a.to_string(), b.to_string())) {
            return Some(r.clone());
        }
        // In SimGrid's clusters: the sender's limiter and link up, the
        // backbone; between two clusters, the zone route from one's
        // router to the other's, then that one's backbone; the
        // receiver's link down and limiter.
        let (pa, pb) = (self.ports.get(a)?, self.ports.get(b)?);
        let between = if pa.cluster == pb.cluster {
            None
        } else {
            Some(self.zone_routes.get(&(pa.cluster, pb.cluster))?)
        };
        let mut route = Vec::with_capacity(6);
        route.extend(pa.limiter);
        route.extend(pa.links.map(|(up, _)| up));
        route.extend(self.backbones[pa.cluster]);
        if let Some(zr) = between {
            route.extend(zr);
            route.extend(self.backbones[pb.cluster]);
        }
        route.extend(pb.links.map(|(_, down)| down));
        route.extend(pb.limiter);
        Some(route)
    }

    /// A `<cluster>`'s hosts, their private links and backbone, and the
    /// routes among them.
    fn add_cluster(
        &mut self,
        el: roxmltree::Node,
        wanted: &std::collections::BTreeSet<&str>,
        add_link: &mut impl FnMut(&mut Platform, String, Link) -> usize,
    ) -> Result<(), String> {
        let id = el.attribute("id").unwrap_or("cluster");
        let (prefix, suffix) = (
            el.attribute("prefix").unwrap_or(""),
            el.attribute("suffix").unwrap_or(""),
        );
        let speed = el.attribute("speed").and_then(speed_flops);
        let link = link_of(el, "bw", "lat");
        let backbone = match el.attribute("bb_bw") {
            Some(_) => Some(
                link_of(el, "bb_bw", "bb_lat")
                    .ok_or_else(|| format!("cluster {id:?}: bad backbone"))?,
            ),
            None => None,
        };
        let backbone = backbone.map(|b| {
            let fatpipe = el.attribute("bb_sharing_policy") == Some("FATPIPE");
            add_link(self, format!("{id}_backbone"), Link { fatpipe, ..b })
        });
        let policy = el.attribute("sharing_policy").unwrap_or("SPLITDUPLEX");
        let cluster = self.backbones.len();
        self.backbones.push(backbone);
        self.cluster_ids.insert(id.to_string(), cluster);
        let limiter_bw = match el.attribute("limiter_link") {
            Some(v) => Some(
                bandwidth_bytes(v)
                    .or_else(|| v.trim().parse::<f64>().ok().filter(|b| *b > 0.0))
                    .ok_or_else(|| format!("cluster {id:?}: bad limiter_link"))?,
            ),
            None => None,
        };
        for i in crate::cluster::radical_numbers(el.attribute("radical").unwrap_or(""))? {
            let name = node_name(&format!("{prefix}{i}{suffix}"));
            if let Some(s) = speed.filter(|_| wanted.contains(name.as_str())) {
                self.speeds.insert(name.clone(), s);
            }
            let links = link.clone().map(|l| {
                let link_id = format!("{id}_{name}");
                match policy {
                    "SPLITDUPLEX" => (
                        add_link(self, format!("{link_id}_UP"), l.clone()),
                        add_link(self, format!("{link_id}_DOWN"), l),
                    ),
                    other => {
                        let fatpipe = other == "FATPIPE";
                        let one = add_link(self, link_id, Link { fatpipe, ..l });
                        (one, one)
                    }
                }
            });
            let limiter = limiter_bw.map(|bandwidth| {
                let link = Link {
                    bandwidth,
                    latency: 0.0,
                    fatpipe: false,
                };
                add_link(self, format!("{id}_{name}_limiter"), link)
            });
            self.ports.insert(
                name,
                Port {
                    cluster,
                    links,
                    limiter,
                },
            );
        }
        Ok(())
    }

    /// The speed of compute host `node`, in flops per second.
    pub fn speed(&self, node: &str) -> Option<f64> {
        self.speeds.get(node).copied()
    }

    /// The compute hosts without a speed.
    pub fn unspeeded(&self) -> &[String] {
        &self.unspeeded
    }

    /// Whether every ordered pair of distinct compute hosts has a route.
    pub fn routes_every_pair(&self) -> bool {
        self.every_pair
    }

    /// The seconds a parallel task takes with part `k` on `hosts[k]`:
    /// `cpu[k]` flops on its host, `com[i * n + j]` bytes from part `i`
    /// to part `j`. SimGrid's model for parallel tasks (ptask_L07): every
    /// resource progresses at the rate of the most loaded one, so the
    /// task takes the largest of each host's flops over its speed and
    /// each link's bytes over its bandwidth (a FATPIPE link's largest
    /// flow alone), after the longest latency of the routes it uses.
    /// What a host sends itself costs nothing. None when a host's speed
    /// or a route is unknown.
    pub fn task_time(&self, hosts: &[&str], cpu: &[f64], com: &[f64]) -> Option<f64> {
        let n = hosts.len();
        let mut flops: BTreeMap<&str, f64> = BTreeMap::new();
        for (k, c) in cpu.iter().enumerate().filter(|(_, c)| **c > 0.0) {
            *flops.entry(*hosts.get(k)?).or_default() += c;
        }
        let mut slowest = 0.0f64;
        for (h, f) in flops {
            slowest = slowest.max(f / self.speed(h)?);
        }
        let mut load = vec![0.0f64; self.links.len()];
        let mut latency = 0.0f64;
        for i in 0..n {
            for j in 0..n {
                let bytes = com.get(i * n + j).copied().unwrap_or(0.0);
                if bytes <= 0.0 || hosts[i] == hosts[j] {
                    continue;
                }
                let route = self.route(hosts[i], hosts[j])?;
                let mut lat = 0.0;
                for l in route {
                    let link = &self.links[l];
                    lat += link.latency;
                    load[l] = if link.fatpipe {
                        load[l].max(bytes)
                    } else {
                        load[l] + bytes
                    };
                }
                latency = latency.max(lat);
            }
        }
        for (l, bytes) in load.iter().enumerate() {
            slowest = slowest.max(bytes / self.links[l].bandwidth);
        }
        Some(slowest + latency)
    }
}

/// A link from `el`'s bandwidth and latency attributes.
fn link_of(el: roxmltree::Node, bw: &str, lat: &str) -> Option<Link> {
    Some(Link {
        bandwidth: bandwidth_bytes(el.attribute(bw)?)?,
        latency: el.attribute(lat).map_or(Some(0.0), latency_seconds)?,
        fatpipe: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_cluster_routes_through_its_links_and_backbone() {
        // Links of 2 GB/s and 10 us each way, a backbone of 4 GB/s, 2 us.
        // Host 0 computes 1 s and sends 3 GB to each of 1 and 2; 1 sends
        // 1 GB to 2. Host 0's link out: 6 GB, 3 s; the backbone 7 GB,
        // 1.75 s. 3 s, plus 10 + 2 + 10 us.
        let xml = r#"<platform version="4.1"><zone id="z" routing="Full">
            <cluster id="c" prefix="h" suffix="" radical="0-2" speed="1Gf"
                     bw="2GBps" lat="10us" bb_bw="4GBps" bb_lat="2us"/>
            </zone></platform>"#;
        let p = Platform::from_xml(xml, &names(&["h0", "h1", "h2"])).unwrap();
        assert!(p.routes_every_pair());
        // Two clusters with no route between them (a zoneRoute is not
        // derived) do not route every pair.
        let two = xml.replace(
            "</zone>",
            r#"<cluster id="d" prefix="g" suffix="" radical="0-1" speed="1Gf" bw="2GBps" lat="10us"/></zone>"#,
        );
        let q = Platform::from_xml(&two, &names(&["h0", "h1", "h2", "g0", "g1"])).unwrap();
        assert!(!q.routes_every_pair());
        assert!(q
            .task_time(&["g0", "g1"], &[0.0, 0.0], &[0.0, 2e9, 0.0, 0.0])
            .is_some());
        assert_eq!(
            q.task_time(&["h0", "g1"], &[0.0, 0.0], &[0.0, 1.0, 0.0, 0.0]),
            None
        );
        let t = p
            .task_time(
                &["h0", "h1", "h2"],
                &[1e9, 0.0, 0.0],
                &[0.0, 3e9, 3e9, 0.0, 5e9, 1e9, 0.0, 0.0, 0.0],
            )
            .unwrap();
        assert!((t - 3.000022).abs() < 1e-12, "{t}");
    }

    #[test]
    fn routes_go_both_ways_and_shared_links_add_up() {
        // a -> b over l1 (1 MB/s, 1 ms) and l2 (2 MB/s, 2 ms, split);
        // a -> c over l3, a FATPIPE of 1 MB/s and 5 ms.
        let xml = r#"
            <platform version="4.1"><zone id="z" routing="Full">
              <host id="a" speed="1Mf"/><host id="b" speed="2Mf"/><host id="c" speed="1Mf"/>
              <link id="l1" bandwidth="1MBps" latency="1ms"/>
              <link id="l2" bandwidth="2MBps" latency="2ms" sharing_policy="SPLITDUPLEX"/>
              <link id="l3" bandwidth="1MBps" latency="5ms" sharing_policy="FATPIPE"/>
              <route src="a" dst="b"><link_ctn id="l1"/><link_ctn id="l2" direction="UP"/></route>
              <route src="a" dst="c"><link_ctn id="l3"/></route>
            </zone></platform>"#;
        let p = Platform::from_xml(xml, &names(&["a", "b", "c"])).unwrap();
        assert!(!p.routes_every_pair(), "b and c have no route");
        // 4 Mflop on b (2 Mf): 2 s; on a, 1 Mflop: 1 s.
        let t = p.task_time(&["a", "b"], &[1e6, 4e6], &[]).unwrap();
        assert_eq!(t, 2.0);
        // 1 MB each way between a and b: l1 is shared, 2 MB at 1 MB/s:
        // 2 s; l2's two directions carry 1 MB each at 2 MB/s. Latency
        // 1 + 2 ms.
        let t = p
            .task_time(&["a", "b"], &[0.0, 0.0], &[0.0, 1e6, 1e6, 0.0])
            .unwrap();
        assert!((t - 2.003).abs() < 1e-12, "{t}");
        // Through the FATPIPE, flows do not add: 1 MB each way, 1 s + 5 ms.
        let t = p
            .task_time(&["a", "c"], &[0.0, 0.0], &[0.0, 1e6, 1e6, 0.0])
            .unwrap();
        assert!((t - 1.005).abs() < 1e-12, "{t}");
        // No route from b to c.
        assert_eq!(
            p.task_time(&["b", "c"], &[0.0, 0.0], &[0.0, 1.0, 0.0, 0.0]),
            None
        );
    }

    #[test]
    fn graphene_routes_between_its_clusters_through_the_zone_routes() {
        // Batsim's graphene.xml: four clusters of hosts with 1.25e8 B/s,
        // 24 us split-duplex links and 1.875e8 B/s limiters, joined by
        // zone routes through each cluster's switch backbone (split,
        // 1.1625e9 B/s, 1.5 us) and explicit limiter (1.51125e9 B/s).
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/workloads/batsim/platforms/graphene.xml");
        let text = std::fs::read_to_string(path).unwrap();
        let hosts: Vec<String> =
            crate::cluster::nodes(&crate::cluster::from_platform_xml(&text).unwrap())
                .iter()
                .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
                .collect();
        assert_eq!(hosts.len(), 144);
        let p = Platform::from_xml(&text, &hosts).unwrap();
        assert!(p.routes_every_pair());
        let one = |a: &str, b: &str| p.task_time(&[a, b], &[], &[0.0, 1e9, 0.0, 0.0]).unwrap();
        // Inside a cluster: the two host links, 1 GB at 1.25e8 B/s, 8 s,
        // and 24 + 24 us.
        assert!((one("graphene-1001", "graphene-1002") - 8.000048).abs() < 1e-9);
        // From cluster 1 to 2: the same links, plus the two switch
        // backbones' 1.5 us.
        assert!((one("graphene-1001", "graphene-1040") - 8.000051).abs() < 1e-9);
        // 13 hosts of cluster 1 each send 1 GB to one of cluster 2: the
        // 13 GB through switch-backbone1's way up (1.1625e9 B/s) take
        // 11.18 s, longer than each host's own 8 s.
        let n = 26;
        let names: Vec<String> = (1001..1014)
            .chain(1040..1053)
            .map(|i| format!("graphene-{i}"))
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut com = vec![0.0; n * n];
        for k in 0..13 {
            com[k * n + 13 + k] = 1e9;
        }
        let t = p.task_time(&refs, &[], &com).unwrap();
        assert!((t - (13e9 / 1.1625e9 + 51e-6)).abs() < 1e-9, "{t}");
    }
}
