//! Regenerates the built-in schema snapshot (`assets/builtin-schemas.json`)
//! from the `k8s-openapi` types, and checks that the committed one is
//! current.
//!
//! Only tests build this: the binary reads the snapshot, so it carries
//! neither `schemars` nor the `JsonSchema` impls of every Kubernetes type.
//! After a `k8s-openapi` upgrade or a new served kind, rewrite it with
//! `KUBESIM_WRITE_SCHEMAS=1 cargo test -p kubesim-core --lib snapshot`.

mod control_plane_kinds;
mod tables;

use k8s_openapi::schemars::generate::SchemaSettings;

use super::generate::{Raw, RawKind, SNAPSHOT};
use crate::resource::Registry;

/// The snapshot as `k8s-openapi` makes it today.
fn generate() -> Raw {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

    let mut gen = SchemaSettings::openapi3().into_generator();
    // The meta types every document needs regardless of kinds.
    let _ = tables::add::<meta::ObjectMeta>(&mut gen);
    let _ = tables::add::<meta::ListMeta>(&mut gen);
    let _ = tables::add::<meta::Status>(&mut gen);
    let _ = tables::add::<meta::DeleteOptions>(&mut gen);
    let _ = tables::add::<meta::Patch>(&mut gen);

    // Built-in kinds as the registry serves them, plus the kinds their
    // subresources speak (Scale, Eviction, Binding).
    let mut gvks: Vec<(String, String, String)> = Vec::new();
    for r in Registry::new().all() {
        if r.is_custom() {
            continue;
        }
        gvks.push((r.group.clone(), r.version.clone(), r.kind.clone()));
        for s in &r.subresources {
            gvks.push((s.group.to_string(), s.version.to_string(), s.kind.clone()));
        }
    }
    let mut seen = std::collections::HashSet::new();
    gvks.retain(|k| seen.insert(k.clone()));

    let mut kinds = Vec::new();
    for (group, version, kind) in gvks {
        if let Some(definition) = tables::add_kind(&mut gen, &group, &version, &kind) {
            kinds.push(RawKind {
                group,
                version,
                kind,
                definition,
            });
        }
    }
    // The generator's transforms rewrite `$ref` siblings into `allOf`
    // (OpenAPI 3.0 ignores siblings of `$ref`) and `null` types into
    // `nullable`.
    let definitions = gen.take_definitions(true);
    Raw {
        generator: format!(
            "k8s-openapi {} (feature v1_36), schemars with OpenAPI 3.0 settings",
            K8S_OPENAPI_VERSION
        ),
        kinds,
        definitions,
    }
}

/// The `k8s-openapi` release the snapshot comes from, as the workspace
/// pins it.
const K8S_OPENAPI_VERSION: &str = "0.29";

fn render(raw: &Raw) -> String {
    let mut text = serde_json::to_string_pretty(raw).expect("a JSON value renders");
    text.push('\n');
    text
}

#[test]
fn the_snapshot_is_what_k8s_openapi_generates() {
    let fresh = render(&generate());
    if std::env::var_os("KUBESIM_WRITE_SCHEMAS").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/builtin-schemas.json");
        std::fs::write(path, &fresh).expect("write the snapshot");
        return;
    }
    // Compared as text: any difference, even in order, changes what
    // `/openapi/v3` serves.
    assert!(
        fresh == SNAPSHOT,
        "assets/builtin-schemas.json is stale: rewrite it with \
         KUBESIM_WRITE_SCHEMAS=1 cargo test -p kubesim-core --lib snapshot"
    );
}
