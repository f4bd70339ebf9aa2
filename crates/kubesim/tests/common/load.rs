//! What the `kubesim load` end-to-end tests share: ClusterLoader2's
//! configs in `testdata/`, a scratch report directory, running the binary,
//! and reading the report files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub fn testdata(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/clusterloader2")
        .join(rel)
}

/// A fresh directory for one test's reports.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kubesim-load-e2e-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&d).ok();
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `kubesim load ARGS` with `env` added to the environment.
pub fn load(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kubesim"));
    c.arg("load").args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run kubesim load")
}

/// A run's status and output, the log's last 40 lines (where a failure
/// shows), for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    )
}

pub fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    v.sort();
    v
}

/// The one report file whose name starts with `prefix`, as JSON.
pub fn json_file(dir: &Path, prefix: &str) -> Value {
    let f = files(dir, prefix);
    assert_eq!(f.len(), 1, "one {prefix}* file in {}: {f:?}", dir.display());
    serde_json::from_str(&std::fs::read_to_string(&f[0]).unwrap()).unwrap()
}
