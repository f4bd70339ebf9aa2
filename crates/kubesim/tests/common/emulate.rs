//! `kubesim emulate` processes beside a `kubesim up --emulator none`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running `kubesim emulate`, killed with SIGKILL on drop (or on
/// [`kill9`](Self::kill9)), and started again with the same arguments by
/// [`respawn`](Self::respawn).
pub struct Emulate {
    child: Option<Child>,
    kubeconfig: PathBuf,
    args: Vec<String>,
    log_dir: PathBuf,
    name: String,
    starts: usize,
}

impl Emulate {
    /// Starts `kubesim emulate --kubeconfig <kubeconfig> <args>`, its log
    /// in `log_dir/<name>-<n>.log`.
    pub fn start(kubeconfig: &Path, args: &[&str], log_dir: &Path, name: &str) -> Emulate {
        let mut e = Emulate {
            child: None,
            kubeconfig: kubeconfig.to_path_buf(),
            args: args.iter().map(|a| a.to_string()).collect(),
            log_dir: log_dir.to_path_buf(),
            name: name.to_string(),
            starts: 0,
        };
        e.respawn();
        e
    }

    pub fn respawn(&mut self) {
        self.kill9();
        self.starts += 1;
        let log = self
            .log_dir
            .join(format!("{}-{}.log", self.name, self.starts));
        let child = Command::new(env!("CARGO_BIN_EXE_kubesim"))
            .args(["emulate", "--kubeconfig"])
            .arg(&self.kubeconfig)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(log).unwrap()))
            .spawn()
            .expect("run kubesim emulate");
        self.child = Some(child);
    }

    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Emulate {
    fn drop(&mut self) {
        self.kill9();
    }
}
