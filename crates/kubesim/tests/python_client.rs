//! End-to-end: the official Python `kubernetes` client against `kubesim up`.
//!
//! Each test runs one script from `tests/python/` with an interpreter that can
//! import `kubernetes`. Without one the tests are skipped, except under CI
//! (`CI=true`), where a missing client is a failure.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use common::Kubesim;

/// The first interpreter that can import `kubernetes`.
fn python() -> Option<&'static str> {
    static FOUND: OnceLock<Option<&'static str>> = OnceLock::new();
    *FOUND.get_or_init(|| {
        [
            "python3",
            "/usr/bin/python3",
            "/usr/local/bin/python3",
            "python",
        ]
        .into_iter()
        .find(|py| {
            Command::new(py)
                .args(["-c", "import kubernetes"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
    })
}

fn run_script(script: &str) {
    let Some(py) = python() else {
        let msg = "no Python interpreter can import `kubernetes` \
                   (install it, e.g. `apt-get install -y python3-kubernetes`)";
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg}");
        }
        eprintln!("SKIPPED {script}: {msg}");
        return;
    };
    let server = Kubesim::start_ephemeral(script.trim_end_matches(".py"));
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("python")
        .join(script);
    let out = Command::new(py)
        .arg(&path)
        .arg(server.kubeconfig())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {py}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{script} failed ({}):\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}\n--- server log ---\n{}",
        out.status,
        server.log()
    );
    assert_eq!(stdout.trim(), "ok", "{script} stdout:\n{stdout}\n{stderr}");
}

#[test]
fn configmaps_with_label_selectors() {
    run_script("configmaps.py");
}

#[test]
fn pod_defaults() {
    run_script("pod_defaults.py");
}

#[test]
fn strategic_merge_patch_of_deployment() {
    run_script("patch_deployment.py");
}

#[test]
fn watch_pods_from_list_resource_version() {
    run_script("watch_pods.py");
}

#[test]
fn api_errors() {
    run_script("errors.py");
}

#[test]
fn rbac_with_real_tokens() {
    run_script("rbac.py");
}
