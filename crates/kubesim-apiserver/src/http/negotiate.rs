//! Content negotiation: JSON, server-side Tables, aggregated discovery.

use kubesim_core::table::IncludeObject;
use kubesim_core::ApiError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    /// A meta.k8s.io Table (v1 or v1beta1), with what rows embed.
    Table {
        v1beta1: bool,
    },
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
    fn aggregated_discovery_is_recognised() {
        let a =
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert!(wants_aggregated(Some(a)));
        assert!(!wants_aggregated(Some("application/json")));
    }
}
