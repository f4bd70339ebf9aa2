//! Content negotiation: JSON, server-side Tables, metadata only
//! (PartialObjectMetadata), aggregated discovery.

use kubesim_core::table::IncludeObject;
use kubesim_core::ApiError;
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    /// A meta.k8s.io Table (v1 or v1beta1), with what rows embed.
    Table {
        v1beta1: bool,
    },
    /// Only each object's metadata, as meta.k8s.io PartialObjectMetadata
    /// (lists: PartialObjectMetadataList), v1 or v1beta1: what client-go's
    /// metadata client (the garbage collector's and quota controller's
    /// informers) asks for.
    Metadata {
        v1beta1: bool,
    },
}

impl Format {
    /// `obj` as this format's PartialObjectMetadata (`Metadata` only).
    pub fn partial(v1beta1: bool, obj: &Value) -> Value {
        json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": meta_api_version(v1beta1),
            "metadata": obj.get("metadata").filter(|m| m.is_object()).cloned().unwrap_or_else(|| json!({})),
        })
    }

    /// A PartialObjectMetadataList of `items` (each already partial).
    pub fn partial_list(v1beta1: bool, list_meta: Value, items: Vec<Value>) -> Value {
        json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": meta_api_version(v1beta1),
            "metadata": list_meta,
            "items": items,
        })
    }
}

fn meta_api_version(v1beta1: bool) -> &'static str {
    if v1beta1 {
        "meta.k8s.io/v1beta1"
    } else {
        "meta.k8s.io/v1"
    }
}

/// The aggregated discovery media type clients ask for and check.
pub const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

struct MediaRange {
    essence: String,
    params: Vec<(String, String)>,
}

fn ranges(accept: &str) -> Vec<MediaRange> {
    accept
        .split(',')
        .map(|r| {
            let mut it = r.split(';');
            let essence = it.next().unwrap_or("").trim().to_ascii_lowercase();
            let params = it
                .filter_map(|p| p.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().trim_matches('"').to_string()))
                .collect();
            MediaRange { essence, params }
        })
        .collect()
}

impl MediaRange {
    fn param(&self, k: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
    fn is_json(&self) -> bool {
        matches!(
            self.essence.as_str(),
            "application/json" | "application/*" | "*/*" | ""
        )
    }
}

/// Chooses the response format for a resource request. No Accept (kube-rs)
/// means JSON; protobuf is answered with JSON when JSON is also acceptable.
pub fn format(accept: Option<&str>) -> Result<Format, ApiError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(Format::Json);
    };
    let mut any_json = false;
    for r in ranges(accept) {
        if !r.is_json() {
            continue;
        }
        match r.param("as") {
            Some("Table") => {
                if r.param("g") == Some("meta.k8s.io") {
                    match r.param("v") {
                        Some("v1") => return Ok(Format::Table { v1beta1: false }),
                        Some("v1beta1") => return Ok(Format::Table { v1beta1: true }),
                        _ => {}
                    }
                }
            }
            Some("PartialObjectMetadata") | Some("PartialObjectMetadataList") => {
                if r.param("g") == Some("meta.k8s.io") {
                    match r.param("v") {
                        Some("v1") => return Ok(Format::Metadata { v1beta1: false }),
                        Some("v1beta1") => return Ok(Format::Metadata { v1beta1: true }),
                        _ => {}
                    }
                }
            }
            Some(_) => {}
            None => any_json = true,
        }
        if any_json {
            return Ok(Format::Json);
        }
    }
    if any_json {
        return Ok(Format::Json);
    }
    Err(ApiError::not_acceptable(format!(
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {accept})"
    )))
}

/// Whether a discovery request accepts the aggregated v2 document.
pub fn wants_aggregated(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        ranges(a).iter().any(|r| {
            r.essence == "application/json"
                && r.param("g") == Some("apidiscovery.k8s.io")
                && r.param("v") == Some("v2")
                && r.param("as") == Some("APIGroupDiscoveryList")
        })
    })
}

pub fn include_object(q: Option<&str>) -> Result<IncludeObject, ApiError> {
    match q {
        None | Some("") | Some("Metadata") => Ok(IncludeObject::Metadata),
        Some("Object") => Ok(IncludeObject::Object),
        Some("None") => Ok(IncludeObject::None),
        Some(v) => Err(ApiError::bad_request(format!(
            "includeObject must be one of None, Metadata or Object, got {v:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_get_asks_for_a_table() {
        let a = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(format(Some(a)).unwrap(), Format::Table { v1beta1: false });
        assert_eq!(format(None).unwrap(), Format::Json);
        assert_eq!(
            format(Some("application/vnd.kubernetes.protobuf,application/json")).unwrap(),
            Format::Json
        );
        assert_eq!(
            format(Some("application/vnd.kubernetes.protobuf"))
                .unwrap_err()
                .code,
            406
        );
    }

    #[test]
    fn the_metadata_client_gets_partial_object_metadata() {
        // client-go's metadata client: protobuf first, then JSON.
        for as_ in ["PartialObjectMetadata", "PartialObjectMetadataList"] {
            let a = format!(
                "application/vnd.kubernetes.protobuf;as={as_};g=meta.k8s.io;v=v1,application/json;as={as_};g=meta.k8s.io;v=v1,application/json"
            );
            assert_eq!(
                format(Some(&a)).unwrap(),
                Format::Metadata { v1beta1: false }
            );
        }
        let a = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1";
        assert_eq!(format(Some(a)).unwrap(), Format::Metadata { v1beta1: true });
        let obj = json!({"kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
            "metadata": {"name": "n", "resourceVersion": "7"}, "spec": {}});
        assert_eq!(
            Format::partial(false, &obj),
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"name": "n", "resourceVersion": "7"}})
        );
    }

    #[test]
    fn aggregated_discovery_is_recognised() {
        let a =
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert!(wants_aggregated(Some(a)));
        assert!(!wants_aggregated(Some("application/json")));
    }
}
