//! A test hook: an object written into the store as it is, past every
//! check of the API, as a store written before the API checked types may
//! hold. Tests of the components that must not trust what is stored (the
//! controllers, scheduler, emulator, simulation and load runner) plant
//! objects of the wrong shape with it; nothing else may call it.

use kubesim_core::ResourceInfo;
use kubesim_store::{Store, WriteOp};
use serde_json::{json, Value};

use super::attrs;

/// Writes `obj` (named by its `metadata.name`) under `info` in namespace
/// `ns` ("" for cluster-scoped kinds), with a fresh resourceVersion and a
/// uid, and the labels and field values lists and watches select by.
pub fn plant(store: &dyn Store, info: &ResourceInfo, ns: &str, obj: Value) {
    let name = obj["metadata"]["name"].as_str().expect("name").to_string();
    let key = if ns.is_empty() {
        name
    } else {
        format!("{ns}/{name}")
    };
    store
        .write(&info.storage_key(), &key, &mut |_, rev| {
            let mut o = obj.clone();
            o["metadata"]["resourceVersion"] = json!(rev.to_string());
            o["metadata"]["uid"] = json!(format!("planted-{rev}"));
            if !ns.is_empty() {
                o["metadata"]["namespace"] = json!(ns);
            }
            WriteOp::Put {
                bytes: serde_json::to_vec(&o).expect("json").into(),
                attrs: attrs::compute(info, &o),
            }
        })
        .expect("planted");
}
