//! Services, endpoints, endpoint slices, ingresses and network policies.

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::{json, Value};

use super::age::age;
use super::columns::{self, string, Column};
use super::fields::{
    arr, format_label_selector, format_labels, int, join_host_port, list_with_more, opt_int, opt_s,
    s,
};
use super::Row;

fn name(obj: &Value) -> Value {
    json!(crate::meta::name(obj))
}

pub(super) fn service_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string("Type", "type determines how the Service is exposed. Defaults to ClusterIP."),
        string(
            "Cluster-IP",
            "clusterIP is the IP address of the service and is usually assigned randomly.",
        ),
        string(
            "External-IP",
            "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
        ),
        string("Port(s)", "The list of ports that are exposed by this service."),
        columns::age(),
        string(
            "Selector",
            "Route service traffic to pods with label keys and values matching this selector.",
        )
        .wide(),
    ]
}

/// Load-balancer ingress points, sorted and unique. The server renders the
/// wide form, so the list is never clipped.
fn lb_ingress(status: Option<&Value>) -> Vec<String> {
    let set: BTreeSet<String> = status
        .and_then(|v| v.get("ingress"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|i| {
                    let ip = s(i, "/ip");
                    let host = s(i, "/hostname");
                    if !ip.is_empty() {
                        Some(ip.to_string())
                    } else if !host.is_empty() {
                        Some(host.to_string())
                    } else {
                        None
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    set.into_iter().collect()
}

fn external_ip(svc: &Value) -> String {
    let external: Vec<&str> = arr(svc, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match s(svc, "/spec/type") {
        "ClusterIP" | "NodePort" => {
            if external.is_empty() {
                "<none>".into()
            } else {
                external.join(",")
            }
        }
        "LoadBalancer" => {
            let mut all = lb_ingress(svc.pointer("/status/loadBalancer"));
            if all.is_empty() && external.is_empty() {
                return "<pending>".into();
            }
            all.extend(external.iter().map(|e| e.to_string()));
            all.join(",")
        }
        "ExternalName" => s(svc, "/spec/externalName").to_string(),
        _ => "<unknown>".into(),
    }
}

fn ports(svc: &Value) -> String {
    let pieces: Vec<String> = arr(svc, "/spec/ports")
        .iter()
        .map(|p| {
            // Stored services are defaulted to TCP; fall back to it for
            // objects that were not.
            let proto = opt_s(p, "/protocol").unwrap_or("TCP");
            let port = int(p, "/port");
            match opt_int(p, "/nodePort").filter(|n| *n > 0) {
                Some(np) => format!("{port}:{np}/{proto}"),
                None => format!("{port}/{proto}"),
            }
        })
        .collect();
    if pieces.is_empty() {
        "<none>".into()
    } else {
        pieces.join(",")
    }
}

pub(super) fn service_row(svc: &Value, now: Timestamp) -> Row {
    let cluster_ip = opt_s(svc, "/spec/clusterIPs/0")
        .or_else(|| opt_s(svc, "/spec/clusterIP").filter(|ip| !ip.is_empty()))
        .unwrap_or("<none>");
    Row::from(vec![
        name(svc),
        json!(s(svc, "/spec/type")),
        json!(cluster_ip),
        json!(external_ip(svc)),
        json!(ports(svc)),
        json!(age(now, svc)),
        json!(format_labels(svc.pointer("/spec/selector"))),
    ])
}

pub(super) fn endpoints_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "Endpoints",
            "The set of all endpoints is the union of all subsets.",
        ),
        columns::age(),
    ]
}

/// The first three endpoints as ip:port, then how many more (upstream
/// `formatEndpoints`).
fn format_endpoints(ep: &Value) -> String {
    let subsets = arr(ep, "/subsets");
    if subsets.is_empty() {
        return "<none>".into();
    }
    const MAX: usize = 3;
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0usize;
    for ss in subsets {
        let addrs = arr(ss, "/addresses");
        let ports = arr(ss, "/ports");
        if ports.is_empty() {
            // Headless services may have no ports.
            count += addrs.len();
            for a in addrs {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(s(a, "/ip").to_string());
            }
            continue;
        }
        for port in ports {
            count += addrs.len();
            for a in addrs {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(join_host_port(s(a, "/ip"), int(port, "/port")));
            }
        }
    }
    let text = list.join(",");
    if more {
        format!("{text} + {} more...", count - MAX)
    } else {
        text
    }
}

pub(super) fn endpoints_row(ep: &Value, now: Timestamp) -> Row {
    Row::from(vec![
        name(ep),
        json!(format_endpoints(ep)),
        json!(age(now, ep)),
    ])
}

pub(super) fn endpointslice_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "AddressType",
            "addressType specifies the type of address carried by this EndpointSlice.",
        ),
        string(
            "Ports",
            "ports specifies the list of network ports exposed by each endpoint in this slice.",
        ),
        string(
            "Endpoints",
            "endpoints is a list of unique endpoints in this slice.",
        ),
        columns::age(),
    ]
}

pub(super) fn endpointslice_row(es: &Value, now: Timestamp) -> Row {
    let ports: Vec<String> = arr(es, "/ports")
        .iter()
        .map(|p| match (opt_int(p, "/port"), opt_s(p, "/name")) {
            (Some(n), _) => n.to_string(),
            (None, Some(name)) => name.to_string(),
            (None, None) => "*".to_string(),
        })
        .collect();
    let addrs: Vec<String> = arr(es, "/endpoints")
        .iter()
        .flat_map(|e| arr(e, "/addresses").iter())
        .map(|a| a.as_str().unwrap_or("").to_string())
        .collect();
    Row::from(vec![
        name(es),
        json!(s(es, "/addressType")),
        json!(list_with_more(&ports, 3)),
        json!(list_with_more(&addrs, 3)),
        json!(age(now, es)),
    ])
}

pub(super) fn ingress_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "Class",
            "The name of the IngressClass resource that should be used for additional configuration",
        ),
        string(
            "Hosts",
            "Hosts that incoming requests are matched against before the ingress rule",
        ),
        string(
            "Address",
            "Address is a list containing ingress points for the load-balancer",
        ),
        string("Ports", "Ports of TLS configurations that open"),
        columns::age(),
    ]
}

pub(super) fn ingress_row(ing: &Value, now: Timestamp) -> Row {
    let rules = arr(ing, "/spec/rules");
    const MAX: usize = 3;
    let mut hosts: Vec<&str> = Vec::new();
    let mut more = false;
    for r in rules {
        if hosts.len() == MAX {
            more = true;
        }
        let h = s(r, "/host");
        if !more && !h.is_empty() {
            hosts.push(h);
        }
    }
    let hosts = if hosts.is_empty() {
        "*".to_string()
    } else if more {
        format!("{} + {} more...", hosts.join(","), rules.len() - MAX)
    } else {
        hosts.join(",")
    };
    let ports = if arr(ing, "/spec/tls").is_empty() {
        "80"
    } else {
        "80, 443"
    };
    Row::from(vec![
        name(ing),
        json!(opt_s(ing, "/spec/ingressClassName").unwrap_or("<none>")),
        json!(hosts),
        json!(lb_ingress(ing.pointer("/status/loadBalancer")).join(",")),
        json!(ports),
        json!(age(now, ing)),
    ])
}

pub(super) fn networkpolicy_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "Pod-Selector",
            "Selects the pods to which this NetworkPolicy object applies.",
        ),
        columns::age(),
    ]
}

pub(super) fn networkpolicy_row(np: &Value, now: Timestamp) -> Row {
    // podSelector is a struct upstream, never nil: absent means empty.
    let empty = json!({});
    let sel = np.pointer("/spec/podSelector").unwrap_or(&empty);
    Row::from(vec![
        name(np),
        json!(format_label_selector(Some(sel))),
        json!(age(now, np)),
    ])
}
