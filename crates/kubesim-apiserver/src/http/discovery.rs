//! Discovery documents: legacy (`/api`, `/apis`, `/api/v1`, `/apis/G/V`)
//! and aggregated v2, both derived from the registry.

use kubesim_core::resource::version_priority;
use kubesim_core::{Registry, ResourceInfo};
use serde_json::{json, Value};

pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_entry(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(json!({}));
    json!({"name": name, "versions": vs, "preferredVersion": preferred})
}

pub fn api_groups(reg: &Registry) -> Value {
    let groups: Vec<Value> = reg
        .groups()
        .iter()
        .map(|(g, vs)| group_entry(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn api_group(reg: &Registry, group: &str) -> Option<Value> {
    reg.groups()
        .into_iter()
        .find(|(g, _)| g == group)
        .map(|(g, vs)| {
            let mut e = group_entry(&g, &vs);
            e["kind"] = json!("APIGroup");
            e["apiVersion"] = json!("v1");
            e
        })
}

fn sub_kind(r: &ResourceInfo, s: &kubesim_core::resource::Subresource) -> (String, String, String) {
    if s.version.is_empty() {
        (r.group.clone(), r.version.clone(), s.kind.clone())
    } else {
        (s.group.to_string(), s.version.to_string(), s.kind.clone())
    }
}

pub fn resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let rs = reg.in_group_version(group, version);
    if rs.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    for r in &rs {
        let mut e = json!({
            "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced(), "kind": r.kind,
            "verbs": r.verbs,
        });
        if !r.short_names.is_empty() {
            e["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            e["categories"] = json!(r.categories);
        }
        out.push(e);
        for s in &r.subresources {
            let (g, v, k) = sub_kind(r, s);
            let mut se = json!({"name": format!("{}/{}", r.plural, s.name), "singularName": "", "namespaced": r.namespaced(), "kind": k, "verbs": s.verbs});
            if g != r.group || v != r.version {
                se["group"] = json!(g);
                se["version"] = json!(v);
            }
            out.push(se);
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": out}),
    )
}

fn aggregated_versions(reg: &Registry, group: &str, versions: &[String]) -> Vec<Value> {
    let mut vs = versions.to_vec();
    vs.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
    vs.iter()
        .map(|v| {
            let resources: Vec<Value> = reg
                .in_group_version(group, v)
                .iter()
                .map(|r| {
                    let subs: Vec<Value> = r
                        .subresources
                        .iter()
                        .map(|s| {
                            let (g, sv, k) = sub_kind(r, s);
                            json!({"subresource": s.name, "responseKind": {"group": g, "version": sv, "kind": k}, "verbs": s.verbs})
                        })
                        .collect();
                    let mut e = json!({
                        "resource": r.plural,
                        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                        "scope": if r.namespaced() { "Namespaced" } else { "Cluster" },
                        "singularResource": r.singular,
                        "verbs": r.verbs,
                    });
                    if !r.short_names.is_empty() {
                        e["shortNames"] = json!(r.short_names);
                    }
                    if !r.categories.is_empty() {
                        e["categories"] = json!(r.categories);
                    }
                    if !subs.is_empty() {
                        e["subresources"] = json!(subs);
                    }
                    e
                })
                .collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect()
}

/// `/api` in aggregated form.
pub fn aggregated_core(reg: &Registry) -> Value {
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
        "items": [{"metadata": {"creationTimestamp": null}, "versions": aggregated_versions(reg, "", &["v1".to_string()])}]})
}

/// `/apis` in aggregated form.
pub fn aggregated_groups(reg: &Registry) -> Value {
    let items: Vec<Value> = reg
        .groups()
        .iter()
        .map(|(g, vs)| json!({"metadata": {"name": g, "creationTimestamp": null}, "versions": aggregated_versions(reg, g, vs)}))
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}
