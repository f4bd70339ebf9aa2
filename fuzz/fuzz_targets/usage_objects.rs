#![no_main]

//! kwok's ResourceUsage, ClusterResourceUsage and Metric objects as users
//! apply them: JSON input is compiled as each kind; any other text is a
//! CEL expression, compiled and evaluated against a small pod.

use std::sync::Arc;

use kubesim_emulator::usage::cel::{self, Expr, Host, Resource, Scope, Target};
use kubesim_emulator::usage::metric::MetricSet;
use kubesim_emulator::usage::rules::Rule;
use libfuzzer_sys::fuzz_target;

struct Fixed;

impl Host for Fixed {
    fn now(&self) -> f64 {
        0.0
    }
    fn rand(&self) -> f64 {
        0.5
    }
    fn usage(&self, _: &Target, _: Resource, _: Option<&str>, _: u8) -> Result<f64, String> {
        Ok(1.0)
    }
    fn cumulative(&self, _: &Target, _: Resource, _: Option<&str>, _: u8) -> Result<f64, String> {
        Ok(1.0)
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(s) {
        let v = Arc::new(v);
        let _ = Rule::from_object(v.clone(), false);
        let _ = Rule::from_object(v.clone(), true);
        let _ = MetricSet::from_object(v);
        return;
    }
    if let Ok(e) = Expr::compile(s) {
        let pod = serde_json::json!({"kind": "Pod", "metadata": {"name": "p", "namespace": "d"},
            "spec": {"containers": [{"name": "c"}]}});
        let host: Arc<dyn Host> = Arc::new(Fixed);
        let scope = Scope { pod: Some(&pod), ..Scope::default() };
        let _ = cel::eval_number(&e, scope, &host, 0);
        let _ = cel::eval_string(&e, scope, &host, 0);
    }
});
