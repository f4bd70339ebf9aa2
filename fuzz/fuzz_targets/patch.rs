#![no_main]

use kubesim_core::patch::{apply_patch, PatchType};
use kubesim_core::Registry;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let (target, body) = data.split_at(data.len() / 2);
    let current: Value = serde_json::from_slice(target).unwrap_or_else(|_| {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}
        })
    });
    let Some(pods) = Registry::new().get("", "v1", "pods") else {
        return;
    };
    for kind in [PatchType::Json, PatchType::Merge, PatchType::Strategic] {
        let _ = apply_patch(kind, &pods, &current, body);
    }
});
