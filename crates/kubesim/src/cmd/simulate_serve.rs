//! `kubesim simulate --serve`: the simulation's API over HTTP, so a real
//! scheduler binary can be studied in simulated time.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use kubesim_sim::engine::Serve;

/// Who places the pods (`up` and `simulate`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedulerChoice {
    /// kubesim's scheduler, in process.
    Builtin,
    /// No scheduler of kubesim's: one outside kubesim binds the pods
    /// through the API. `external` is the older spelling.
    #[value(alias = "external")]
    None,
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Serve the Kubernetes API over plain HTTP while simulating, write
    /// `<out>/kubeconfig` and print `export KUBECONFIG=...` once the nodes
    /// are Ready, for a scheduler outside kubesim to place the pods
    /// (kubesim's own is off unless --scheduler builtin). Simulated time
    /// stands still while a request is in flight and, while pods are
    /// unbound, until the clients have been quiet for --quiet; the first
    /// job waits for a client to watch pods.
    #[arg(long)]
    pub serve: bool,
    /// Address to serve on (port 0: any free port). [default:
    /// 127.0.0.1:6443]
    #[arg(long, value_name = "ADDR", requires = "serve")]
    pub listen: Option<SocketAddr>,
    /// Wall time the outside scheduler gets to react, after the last
    /// change to a pod or node or its last request, before simulated time
    /// moves on while pods are unbound (Batkube's min-delay). [default:
    /// 200ms]
    #[arg(long, value_name = "DURATION", requires = "serve")]
    pub quiet: Option<String>,
    /// The longest wall time simulated time stands still at one instant
    /// (and the longest wait for a client to watch pods at the start);
    /// then it moves on anyway (Batkube's timeout). [default: 30s]
    #[arg(long, value_name = "DURATION", requires = "serve")]
    pub serve_timeout: Option<String>,
    /// Who places the pods: builtin (the default without --serve), or none
    /// (the default with it: a scheduler outside kubesim, reaching the API
    /// of --serve).
    #[arg(long, value_enum)]
    pub scheduler: Option<SchedulerChoice>,
    /// The audit log of the served API, stamped with simulated time.
    #[command(flatten)]
    pub audit: super::protection::AuditArgs,
}

const DEFAULT_LISTEN: &str = "127.0.0.1:6443";

impl ServeArgs {
    /// Whether kubesim's scheduler runs. Without it and without --serve
    /// nothing can bind a pod; the run then ends saying so.
    pub fn builtin_scheduler(&self) -> bool {
        match self.scheduler {
            Some(c) => c == SchedulerChoice::Builtin,
            None => !self.serve,
        }
    }

    /// Binds the listener and writes the kubeconfig into `out`; None
    /// without --serve.
    pub fn prepare(&self, out: &Path) -> anyhow::Result<Option<Serve>> {
        if !self.serve {
            if self.audit.audit_policy_file.is_some() {
                anyhow::bail!("--audit-policy-file audits the API of --serve: add --serve");
            }
            return Ok(None);
        }
        let quiet = duration(self.quiet.as_deref(), "200ms", "--quiet")?;
        let timeout = duration(self.serve_timeout.as_deref(), "30s", "--serve-timeout")?;
        if quiet >= timeout {
            // Every hold would end on the timeout, never on the quiet.
            anyhow::bail!("--quiet ({quiet:?}) must be shorter than --serve-timeout ({timeout:?})");
        }
        let audit = self.audit.auditor()?;
        let listen = self
            .listen
            .unwrap_or_else(|| DEFAULT_LISTEN.parse().expect("a valid constant address"));
        // --serve speaks plain HTTP only.
        super::up::check_plain_listen(listen, "--listen")?;
        let listener = std::net::TcpListener::bind(listen)
            .with_context(|| format!("cannot listen on {listen}"))?;
        let url = format!("http://{}", listener.local_addr()?);
        std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
        let kc = out.join("kubeconfig");
        // Written aside and renamed so a reader never sees half a file.
        let tmp = out.join("kubeconfig.tmp");
        std::fs::write(&tmp, super::up::kubeconfig(&url))
            .and_then(|()| std::fs::rename(&tmp, &kc))
            .with_context(|| format!("cannot write {}", kc.display()))?;
        let kc = std::fs::canonicalize(&kc).unwrap_or(kc);
        Ok(Some(Serve {
            listener,
            quiet,
            timeout,
            audit,
            ready: Some(Box::new(move || {
                tracing::info!(%url, "the simulation serves the Kubernetes API");
                println!("export KUBECONFIG={}", kc.display());
            })),
        }))
    }
}

fn duration(given: Option<&str>, default: &str, flag: &str) -> anyhow::Result<Duration> {
    kubesim_gocompat::duration::parse_std(given.unwrap_or(default))
        .map_err(|e| anyhow::anyhow!("bad {flag}: {e}"))
}
