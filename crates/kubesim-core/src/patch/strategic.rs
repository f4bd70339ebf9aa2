//! Strategic merge patch: merge-patch semantics plus per-field list
//! strategies and the `$`-directives kubectl emits.

use serde_json::{Map, Value};

use super::json::unprocessable;
use super::strategy::{list_strategy, ListStrategy};
use crate::error::ApiError;
use crate::resource::ResourceInfo;

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_PRIMITIVE: &str = "$deleteFromPrimitiveList/";
const SET_ORDER: &str = "$setElementOrder/";

/// Whether a map key is a patch directive (never copied into the result).
pub fn is_directive(key: &str) -> bool {
    key == PATCH
        || key == RETAIN_KEYS
        || key.starts_with(DELETE_PRIMITIVE)
        || key.starts_with(SET_ORDER)
}

/// Applies a strategic merge `patch` to `current` for a built-in resource.
pub fn strategic_merge(
    resource: &ResourceInfo,
    current: &Value,
    patch: &Value,
) -> Result<Value, ApiError> {
    let patch = patch.as_object().ok_or_else(|| {
        ApiError::bad_request(
            "strategic merge patch format is not supported: the patch must be a JSON object",
        )
    })?;
    let original = current.as_object().cloned().unwrap_or_default();
    let ctx = Ctx { resource };
    let mut path = Vec::new();
    Ok(Value::Object(
        ctx.merge_map(&mut path, original, patch)?
            .unwrap_or_default(),
    ))
}

struct Ctx<'a> {
    resource: &'a ResourceInfo,
}

impl Ctx<'_> {
    fn strategy(&self, path: &[String]) -> ListStrategy {
        let names: Vec<&str> = path.iter().map(String::as_str).collect();
        list_strategy(self.resource, &names)
    }

    /// Merges `patch` into `original`; None means the map was deleted.
    fn merge_map(
        &self,
        path: &mut Vec<String>,
        mut original: Map<String, Value>,
        patch: &Map<String, Value>,
    ) -> Result<Option<Map<String, Value>>, ApiError> {
        match patch.get(PATCH) {
            None => {}
            Some(Value::String(s)) if s == "merge" => {}
            Some(Value::String(s)) if s == "replace" => {
                // The patch's map, minus directives, is the whole new value.
                let mut stripped = patch.clone();
                stripped.remove(PATCH);
                return self.merge_map(path, Map::new(), &stripped);
            }
            Some(Value::String(s)) if s == "delete" => return Ok(None),
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "Unknown patch type: {other} in map"
                )))
            }
        }

        if let Some(retain) = patch.get(RETAIN_KEYS) {
            let keys: Vec<&str> = retain
                .as_array()
                .and_then(|a| a.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
                .ok_or_else(|| ApiError::bad_request("invalid patch format of retainKeys"))?;
            if patch
                .iter()
                .any(|(k, v)| !is_directive(k) && !v.is_null() && !keys.contains(&k.as_str()))
            {
                return Err(unprocessable("patch content doesn't match retainKeys list"));
            }
            original.retain(|k, _| keys.contains(&k.as_str()));
        }

        for (k, v) in patch {
            if let Some(field) = k.strip_prefix(DELETE_PRIMITIVE) {
                let gone = v.as_array().ok_or_else(|| {
                    ApiError::bad_request("invalid patch format of primitive list")
                })?;
                if let Some(Value::Array(items)) = original.get_mut(field) {
                    items.retain(|item| !gone.contains(item));
                }
            }
        }

        for (k, v) in patch {
            if is_directive(k) {
                continue;
            }
            if v.is_null() {
                original.remove(k);
                continue;
            }
            path.push(k.clone());
            let merged = match v {
                Value::Object(pm) => {
                    let base = match original.remove(k) {
                        Some(Value::Object(m)) => m,
                        _ => Map::new(),
                    };
                    self.merge_map(path, base, pm)?.map(Value::Object)
                }
                Value::Array(pl) => {
                    let base = match original.remove(k) {
                        Some(Value::Array(a)) => a,
                        _ => Vec::new(),
                    };
                    Some(Value::Array(self.merge_list(path, base, pl)?))
                }
                scalar => Some(scalar.clone()),
            };
            path.pop();
            if let Some(m) = merged {
                original.insert(k.clone(), m);
            } else {
                original.remove(k);
            }
        }

        for (k, v) in patch {
            if let Some(field) = k.strip_prefix(SET_ORDER) {
                let order = v.as_array().ok_or_else(|| {
                    ApiError::bad_request("invalid patch format of setElementOrder list")
                })?;
                path.push(field.to_string());
                let key = match self.strategy(path) {
                    ListStrategy::MergeByKey(key) => Some(key),
                    _ => None,
                };
                path.pop();
                if let Some(Value::Array(items)) = original.remove(field) {
                    original.insert(field.to_string(), Value::Array(reorder(items, order, key)));
                }
            }
        }
        Ok(Some(original))
    }

    /// Merges a patch list into the original list at `path`.
    fn merge_list(
        &self,
        path: &mut Vec<String>,
        original: Vec<Value>,
        patch: &[Value],
    ) -> Result<Vec<Value>, ApiError> {
        let directive = |v: &Value| v.get(PATCH).and_then(Value::as_str).map(str::to_string);
        // `{"$patch":"replace"}` as an element replaces the whole list.
        let replace_all = patch
            .iter()
            .any(|v| v.is_object() && directive(v).as_deref() == Some("replace"));
        let strategy = self.strategy(path);
        if replace_all || strategy == ListStrategy::Replace {
            let mut out = Vec::new();
            for item in patch {
                if replace_all
                    && item.as_object().is_some_and(|m| {
                        m.len() == 1 && directive(item).as_deref() == Some("replace")
                    })
                {
                    continue;
                }
                if let Some(v) = self.fresh(path, item)? {
                    out.push(v);
                }
            }
            return Ok(out);
        }
        let mut out = original;
        match strategy {
            ListStrategy::MergePrimitive => {
                for item in patch {
                    if item.get(PATCH).is_some() {
                        continue;
                    }
                    if !out.contains(item) {
                        if let Some(v) = self.fresh(path, item)? {
                            out.push(v);
                        }
                    }
                }
            }
            ListStrategy::MergeByKey(key) => {
                for item in patch {
                    let Some(pm) = item.as_object() else {
                        // Scalars in a keyed list have no identity: append.
                        if !out.contains(item) {
                            out.push(item.clone());
                        }
                        continue;
                    };
                    let Some(kv) = pm.get(key) else {
                        return Err(ApiError::bad_request(format!(
                            "map: {item} does not contain declared merge key: {key}"
                        )));
                    };
                    if directive(item).as_deref() == Some("delete") {
                        out.retain(|e| e.get(key) != Some(kv));
                        continue;
                    }
                    match out.iter().position(|e| e.get(key) == Some(kv)) {
                        Some(i) => {
                            let base = match &out[i] {
                                Value::Object(m) => m.clone(),
                                _ => Map::new(),
                            };
                            match self.merge_map(path, base, pm)? {
                                Some(m) => out[i] = Value::Object(m),
                                None => {
                                    out.remove(i);
                                }
                            }
                        }
                        None => {
                            if let Some(m) = self.merge_map(path, Map::new(), pm)? {
                                out.push(Value::Object(m));
                            }
                        }
                    }
                }
            }
            ListStrategy::Replace => {}
        }
        Ok(out)
    }

    /// A patch value with no counterpart in the original: directives are
    /// processed against nothing so none of them survive.
    fn fresh(&self, path: &mut Vec<String>, v: &Value) -> Result<Option<Value>, ApiError> {
        Ok(match v {
            Value::Object(m) => self.merge_map(path, Map::new(), m)?.map(Value::Object),
            Value::Array(a) => Some(Value::Array(self.merge_list(path, Vec::new(), a)?)),
            other => Some(other.clone()),
        })
    }
}

/// Orders `items` as `$setElementOrder` lists them; items the order does not
/// mention (added by someone else) keep their place after the item that
/// preceded them originally.
fn reorder(items: Vec<Value>, order: &[Value], key: Option<&str>) -> Vec<Value> {
    let id = |v: &Value| -> Value {
        match key {
            Some(k) => v.get(k).cloned().unwrap_or(Value::Null),
            None => v.clone(),
        }
    };
    let ids: Vec<Value> = items.iter().map(id).collect();
    let mut placed: Vec<usize> = Vec::new();
    for o in order {
        let want = id(o);
        if let Some(i) = (0..items.len()).find(|i| ids[*i] == want && !placed.contains(i)) {
            placed.push(i);
        }
    }
    let mut front = 0;
    for i in 0..items.len() {
        if placed.contains(&i) {
            continue;
        }
        let pred = (0..i)
            .rev()
            .find_map(|j| placed.iter().position(|p| *p == j));
        match pred {
            Some(pos) => placed.insert(pos + 1, i),
            None => {
                placed.insert(front, i);
                front += 1;
            }
        }
    }
    let mut slots: Vec<Option<Value>> = items.into_iter().map(Some).collect();
    placed
        .into_iter()
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect()
}
