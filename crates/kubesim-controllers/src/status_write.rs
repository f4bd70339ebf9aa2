//! Status writes that can live beside another writer of the same status:
//! a real kube-controller-manager pointed at the cluster, or simply a
//! newer API than the one a controller models. Fields a controller does
//! not compute (`terminatingReplicas`, and whatever later releases add)
//! are kept as they are, and a write is skipped when it would change
//! nothing once Go's `omitempty` is taken into account: upstream leaves a
//! zero count out where kubesim writes 0, and treating the two as
//! different made each controller undo the other's write forever.

use kubesim_core::ApiError;
use kubesim_runtime::{Api, ResourceRef, WriteOptions};
use serde_json::{Map, Value};

/// Writes `obj`'s status; an object deleted meanwhile has no status left
/// to keep, so its 404 is no failure.
pub(crate) async fn write_unless_gone(
    api: &dyn Api,
    resource: &ResourceRef,
    ns: &str,
    obj: Value,
) -> Result<(), ApiError> {
    let written = api
        .update(resource, ns, obj, Some("status"), &WriteOptions::default())
        .await;
    match written {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// `fresh` laid over the stored status `old`: every field of `fresh`
/// replaces the stored one, the fields of `owned` that `fresh` lacks are
/// removed (the controller decided they are gone), and anything else
/// stays.
pub(crate) fn overlay(old: Option<&Value>, fresh: Value, owned: &[&str]) -> Value {
    let mut out: Map<String, Value> = old.and_then(Value::as_object).cloned().unwrap_or_default();
    for k in owned {
        out.remove(*k);
    }
    if let Value::Object(f) = fresh {
        out.extend(f);
    }
    Value::Object(out)
}

/// A top-level field as Go would see it: a zero number or an empty
/// object reads as unset.
fn unset(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

/// Whether writing `new` over the stored status `old` changes anything a
/// client can tell apart.
pub(crate) fn same(old: Option<&Value>, new: &Value) -> bool {
    let empty = Map::new();
    let a = old.and_then(Value::as_object).unwrap_or(&empty);
    let Some(b) = new.as_object() else {
        return old == Some(new);
    };
    let differs = |x: Option<&Value>, y: Option<&Value>| match (x, y) {
        (Some(x), Some(y)) => x != y,
        (Some(v), None) | (None, Some(v)) => !unset(v),
        (None, None) => false,
    };
    !a.keys()
        .chain(b.keys())
        .any(|k| differs(a.get(k), b.get(k)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn overlay_keeps_what_it_does_not_own() {
        let old = json!({"replicas": 3, "terminatingReplicas": 1, "conditions": [{"type": "X"}]});
        let new = overlay(
            Some(&old),
            json!({"replicas": 2, "readyReplicas": 2}),
            &["conditions"],
        );
        assert_eq!(
            new,
            json!({"replicas": 2, "terminatingReplicas": 1, "readyReplicas": 2})
        );
    }

    #[test]
    fn zero_counts_equal_absent_ones() {
        let stored = json!({"replicas": 2, "observedGeneration": 1});
        assert!(same(
            Some(&stored),
            &json!({"replicas": 2, "observedGeneration": 1, "readyReplicas": 0})
        ));
        assert!(!same(
            Some(&stored),
            &json!({"replicas": 2, "observedGeneration": 1, "readyReplicas": 1})
        ));
        assert!(!same(None, &json!({"replicas": 1})));
        assert!(same(None, &json!({"replicas": 0})));
    }
}
