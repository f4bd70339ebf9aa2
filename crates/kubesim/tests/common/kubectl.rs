//! Running the real `kubectl` against a `kubesim up` started for one test.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::Kubesim;

/// A running server and the kubectl settings that reach it.
pub struct Cluster {
    pub server: Kubesim,
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
}

impl Cluster {
    /// Starts `kubesim up` with an in-memory store.
    pub fn start(name: &str) -> Self {
        Self::start_with(name, &[])
    }

    /// Starts `kubesim up` with extra arguments.
    pub fn start_with(name: &str, args: &[&str]) -> Self {
        let server = Kubesim::start_ephemeral_with(name, args);
        Cluster {
            dir: server.data_dir().to_path_buf(),
            kubeconfig: server.kubeconfig(),
            server,
        }
    }

    /// Polls `check` up to `tries` times, `step` apart, until it returns
    /// Some; panics with `what` otherwise.
    pub fn eventually<T>(
        &self,
        what: &str,
        tries: usize,
        step: Duration,
        mut check: impl FnMut() -> Option<T>,
    ) -> T {
        for _ in 0..tries {
            if let Some(v) = check() {
                return v;
            }
            std::thread::sleep(step);
        }
        panic!("timed out waiting for {what}");
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_in(args, None)
    }

    pub fn kubectl_in(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = Command::new("kubectl");
        cmd.env("KUBECONFIG", &self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.join("cache"))
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("kubectl is installed");
        if let Some(s) = stdin {
            child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
        }
        child.wait_with_output().unwrap()
    }

    /// Runs kubectl, expects success, returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.kubectl(args);
        assert!(
            o.status.success(),
            "kubectl {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    pub fn apply_stdin(&self, args: &[&str], manifest: &str) -> String {
        let o = self.kubectl_in(args, Some(manifest));
        assert!(
            o.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    pub fn fails(&self, args: &[&str]) -> String {
        let o = self.kubectl(args);
        assert!(!o.status.success(), "kubectl {args:?} should fail");
        String::from_utf8_lossy(&o.stderr).into_owned()
    }

    /// Applies a manifest from stdin.
    pub fn apply(&self, manifest: &str) {
        self.apply_stdin(&["apply", "-f", "-"], manifest);
    }

    /// Polls `kubectl args` (up to 300 times, 200 ms apart) until it
    /// succeeds with output satisfying `cond`; returns that output.
    pub fn until(&self, args: &[&str], cond: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        for _ in 0..300 {
            let o = self.kubectl(args);
            last = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            if o.status.success() && cond(&last) {
                return last;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("kubectl {args:?} never satisfied the condition; last output:\n{last}");
    }

    /// `kubectl args -o json`, parsed.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&a)).expect("kubectl printed JSON")
    }

    /// Items of a list, without those being deleted.
    pub fn items(&self, args: &[&str]) -> Vec<Value> {
        self.json(args)["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|o| o["metadata"]["deletionTimestamp"].is_null())
            .collect()
    }

    /// The names of [`items`](Self::items), sorted.
    pub fn names(&self, args: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = self
            .items(args)
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap_or("").to_string())
            .collect();
        v.sort();
        v
    }

    /// Polls `cond` (up to 300 times, 200 ms apart) until it holds.
    pub fn wait_for(&self, what: &str, cond: impl Fn() -> bool) {
        self.eventually(what, 300, Duration::from_millis(200), || {
            cond().then_some(())
        })
    }

    /// `kubectl rollout status`, which waits until the rollout completes.
    pub fn rollout_status(&self, what: &str) {
        self.ok(&["rollout", "status", what, "--timeout=90s"]);
    }
}
