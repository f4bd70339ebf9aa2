//! Audit logging as kube-apiserver's `--audit-policy-file` and
//! `--audit-log-path` do it: a Policy gives each request a level, and the
//! request's events are written as JSON lines (`audit.k8s.io/v1` Event).
//!
//! The HTTP side (what is recorded when) is in `http::audited`; this module
//! knows the policy, the event's shape and where lines go.

pub mod event;
pub mod policy;

use std::io::Write;
use std::path::Path;

use parking_lot::Mutex;

pub use event::Event;
pub use policy::{Attributes, Decision, Level, Policy, ResourceAttributes, Stage};

/// The policy and the log it writes to.
pub struct Auditor {
    policy: Policy,
    sink: Mutex<Box<dyn Write + Send>>,
}

impl Auditor {
    pub fn new(policy: Policy, sink: Box<dyn Write + Send>) -> Auditor {
        Auditor {
            policy,
            sink: Mutex::new(sink),
        }
    }

    /// Reads the policy file and opens the log (`-` is standard output,
    /// anything else a file appended to). The error is one line.
    pub fn open(policy_file: &Path, log_path: &str) -> Result<Auditor, String> {
        let text = std::fs::read_to_string(policy_file)
            .map_err(|e| format!("cannot read {}: {e}", policy_file.display()))?;
        let policy = Policy::parse(&text).map_err(|e| format!("{}: {e}", policy_file.display()))?;
        let sink: Box<dyn Write + Send> = if log_path == "-" {
            Box::new(std::io::stdout())
        } else {
            let path = Path::new(log_path);
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            }
            Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| format!("cannot open {log_path}: {e}"))?,
            )
        };
        Ok(Auditor::new(policy, sink))
    }

    pub fn decide(&self, a: &Attributes) -> Decision {
        self.policy.decide(a)
    }

    /// Writes one event as a line. Each line is flushed at once so that a
    /// reader (or a crash) never sees half an event; a failed write is
    /// logged and the request goes on, as in upstream's blocking mode
    /// without a buffer.
    pub fn write(&self, event: &Event) {
        let mut line = match serde_json::to_vec(event) {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "cannot encode an audit event");
                return;
            }
        };
        line.push(b'\n');
        let mut sink = self.sink.lock();
        if let Err(e) = sink.write_all(&line).and_then(|()| sink.flush()) {
            tracing::warn!(error = %e, "cannot write the audit log");
        }
    }
}
