//! Claiming: a controller owns the objects that carry its controller
//! reference and match its selector. It adopts orphans that match (when it
//! is not being deleted) and releases objects of its own that no longer
//! match, so a relabelled pod leaves its ReplicaSet and a matching bare pod
//! joins one. Owners write selectors in one of two forms ([`SelectorForm`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use kubesim_core::selector::LabelSelector;
use kubesim_core::{meta, ApiError};
use kubesim_runtime::{Api, ResourceRef};
use serde_json::{json, Value};

use crate::pods::{controller_ref, controller_uid};

fn matches(selector: &LabelSelector, obj: &Value) -> bool {
    !selector.is_empty() && selector.matches_map(&meta::labels(obj))
}

/// The objects among `candidates` (one namespace) that `owner` controls
/// after adopting and releasing as needed. `extra` lets a caller refuse
/// objects the selector alone would accept (StatefulSets only own pods
/// named after them).
pub async fn claim(
    api: &dyn Api,
    r: &ResourceRef,
    owner: &Value,
    selector: &LabelSelector,
    candidates: Vec<Arc<Value>>,
    extra: &(dyn Fn(&Value) -> bool + Send + Sync),
) -> Result<Vec<Arc<Value>>, ApiError> {
    let uid = meta::uid(owner).to_string();
    let owner_deleting = meta::is_deleting(owner);
    let mut out = Vec::new();
    for obj in candidates {
        let fits = matches(selector, &obj) && extra(&obj);
        match controller_uid(&obj) {
            Some(u) if u == uid => {
                if fits {
                    out.push(obj);
                } else if !meta::is_deleting(&obj) {
                    release(api, r, &obj, &uid).await?;
                }
            }
            Some(_) => {}
            None => {
                if fits && !owner_deleting && !meta::is_deleting(&obj) {
                    if let Some(adopted) = adopt(api, r, &obj, owner).await? {
                        out.push(Arc::new(adopted));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Adds `owner`'s controller reference if `obj` is still an orphan.
async fn adopt(
    api: &dyn Api,
    r: &ResourceRef,
    obj: &Value,
    owner: &Value,
) -> Result<Option<Value>, ApiError> {
    let reference = controller_ref(owner);
    let mut result = None;
    let change = |o: &mut Value| {
        if controller_uid(o).is_some() {
            return false;
        }
        let m = kubesim_core::meta::metadata_mut(o);
        let refs = m.entry("ownerReferences").or_insert_with(|| json!([]));
        match refs.as_array_mut() {
            Some(a) => a.push(reference.clone()),
            None => *refs = json!([reference.clone()]),
        }
        true
    };
    if controller_uid(obj).is_none() {
        let patch =
            json!({"metadata": {"ownerReferences": [reference.clone()], "uid": meta::uid(obj)}});
        patch_meta(api, r, obj, patch).await?;
    }
    let mut local = obj.clone();
    if change(&mut local) {
        result = Some(local);
    }
    Ok(result)
}

/// Removes the owner's reference from `obj`.
pub(crate) async fn release(
    api: &dyn Api,
    r: &ResourceRef,
    obj: &Value,
    owner_uid: &str,
) -> Result<(), ApiError> {
    let change = |o: &mut Value| {
        let Some(Value::Array(refs)) = o
            .get_mut("metadata")
            .and_then(|m| m.get_mut("ownerReferences"))
        else {
            return false;
        };
        let before = refs.len();
        refs.retain(|x| x.get("uid").and_then(Value::as_str) != Some(owner_uid));
        before != refs.len()
    };
    let mut local = obj.clone();
    if !change(&mut local) {
        return Ok(());
    }
    let patch = json!({"metadata": {
        "ownerReferences": [{"$patch": "delete", "uid": owner_uid}],
        "uid": meta::uid(obj),
    }});
    patch_meta(api, r, obj, patch).await
}

/// Adoption and release write as upstream's controllers do: a strategic
/// merge patch of the owner references naming the object's uid, which
/// their roles allow where reading the object may not be (a ReplicaSet's
/// controller may patch pods, not get them). A vanished object, or another
/// of the same name, is left alone.
async fn patch_meta(
    api: &dyn Api,
    r: &ResourceRef,
    obj: &Value,
    patch: Value,
) -> Result<(), ApiError> {
    match api
        .patch(
            r,
            meta::namespace(obj),
            meta::name(obj),
            kubesim_core::patch::PatchType::Strategic,
            patch.to_string().into_bytes(),
            None,
            &kubesim_runtime::WriteOptions::default(),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// The key of the object of `kind` in `owners` that controls `child`, if
/// it is cached with the referenced uid.
pub fn controller_key(
    child: &Value,
    kind: &str,
    owners: &kubesim_runtime::Cache,
) -> Option<kubesim_runtime::ObjectKey> {
    let r = meta::pointer(child, "/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?;
    if r.get("kind").and_then(Value::as_str) != Some(kind) {
        return None;
    }
    let name = r.get("name").and_then(Value::as_str)?;
    let uid = r.get("uid").and_then(Value::as_str)?;
    let ns = meta::namespace(child);
    let owner = owners.get(ns, name)?;
    (meta::uid(&owner) == uid).then(|| kubesim_runtime::ObjectKey::new(ns, name))
}

/// How an owner writes the selector at `/spec/selector`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectorForm {
    /// A `metav1.LabelSelector` (`matchLabels`, `matchExpressions`), as the
    /// apps/v1 and batch/v1 kinds have.
    LabelSelector,
    /// A plain map of labels that must all be equal, as core/v1
    /// ReplicationControllers have.
    LabelMap,
}

impl SelectorForm {
    pub fn read(self, obj: &Value) -> Result<LabelSelector, ApiError> {
        let v = obj.pointer("/spec/selector").unwrap_or(&Value::Null);
        match self {
            SelectorForm::LabelSelector => LabelSelector::from_json(v),
            SelectorForm::LabelMap => label_map(v),
        }
    }
}

fn label_map(v: &Value) -> Result<LabelSelector, ApiError> {
    let map = match v {
        Value::Null => return Ok(LabelSelector::everything()),
        Value::Object(m) => m,
        other => {
            return Err(ApiError::bad_request(format!(
                "selector must be a map of labels, got {other}"
            )))
        }
    };
    let mut labels = BTreeMap::new();
    for (k, v) in map {
        let Some(v) = v.as_str() else {
            return Err(ApiError::bad_request(format!(
                "selector[{k}]: value must be a string"
            )));
        };
        labels.insert(k.clone(), v.to_string());
    }
    LabelSelector::from_map(&labels)
}

/// Keys of the objects in `owners` (same namespace as `child`) whose
/// selector at `selector_path` (a `metav1.LabelSelector`) matches
/// `child`'s labels: who might adopt an orphan.
pub fn matching_owners(
    child: &Value,
    owners: &kubesim_runtime::Cache,
    selector_path: &str,
) -> Vec<kubesim_runtime::ObjectKey> {
    owners_selecting(child, owners, |o| {
        o.pointer(selector_path)
            .and_then(|s| LabelSelector::from_json(s).ok())
    })
}

/// [`matching_owners`] for owners whose `/spec/selector` has `form`.
pub fn matching_owners_in(
    child: &Value,
    owners: &kubesim_runtime::Cache,
    form: SelectorForm,
) -> Vec<kubesim_runtime::ObjectKey> {
    owners_selecting(child, owners, |o| form.read(o).ok())
}

fn owners_selecting(
    child: &Value,
    owners: &kubesim_runtime::Cache,
    selector: impl Fn(&Value) -> Option<LabelSelector>,
) -> Vec<kubesim_runtime::ObjectKey> {
    if owners.is_empty() {
        return Vec::new();
    }
    let candidates = owners.list_namespace(meta::namespace(child));
    // Most pods have no possible owner: then their labels are not read.
    if candidates.is_empty() {
        return Vec::new();
    }
    let labels = meta::labels(child);
    candidates
        .into_iter()
        .filter(|o| selector(o).is_some_and(|s| !s.is_empty() && s.matches_map(&labels)))
        .map(|o| kubesim_runtime::ObjectKey::of(&o))
        .collect()
}

/// The `metav1.LabelSelector` at `/spec/selector`; None (with a log line)
/// when invalid.
pub fn selector_of(obj: &Value) -> Option<LabelSelector> {
    selector_in(obj, SelectorForm::LabelSelector)
}

/// The selector at `/spec/selector` read in `form`; None (with a log line)
/// when invalid.
pub fn selector_in(obj: &Value, form: SelectorForm) -> Option<LabelSelector> {
    match form.read(obj) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(object = meta::name(obj), error = %e.message, "invalid selector");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_label_map_selects_by_equality_on_every_key() {
        let rc = json!({"spec": {"selector": {"app": "web", "tier": "front"}}});
        let s = selector_in(&rc, SelectorForm::LabelMap).unwrap();
        assert!(s.matches_map(&labels(&[("app", "web"), ("tier", "front"), ("x", "y")])));
        assert!(!s.matches_map(&labels(&[("app", "web")])));
        assert!(!s.matches_map(&labels(&[("app", "web"), ("tier", "back")])));
    }

    #[test]
    fn each_form_reads_only_its_own_shape() {
        let rs = json!({"spec": {"selector": {"matchLabels": {"app": "web"}}}});
        let s = selector_in(&rs, SelectorForm::LabelSelector).unwrap();
        assert!(s.matches_map(&labels(&[("app", "web")])));
        // As a map, `matchLabels` is a label key whose value is not a string.
        assert!(selector_in(&rs, SelectorForm::LabelMap).is_none());
        let none = json!({"spec": {}});
        assert!(selector_in(&none, SelectorForm::LabelMap)
            .unwrap()
            .is_empty());
        let bad = json!({"spec": {"selector": {"app": 1}}});
        assert!(selector_in(&bad, SelectorForm::LabelMap).is_none());
    }
}
