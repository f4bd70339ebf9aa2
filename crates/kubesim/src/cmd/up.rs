//! `kubesim up`: the API server on the embedded store, in real time.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use kubesim_apiserver::http::{metrics::Metrics, router, App};
use kubesim_apiserver::service::attrs;
use kubesim_apiserver::Server;
use kubesim_runtime::{Clock, Rng};
use kubesim_store::{MemStore, Options};

#[derive(clap::Args, Debug)]
pub struct UpArgs {
    /// Address to serve the API on.
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: SocketAddr,
    /// Directory for the durable store and the kubeconfig.
    #[arg(long, default_value = "./.kubesim")]
    pub data_dir: PathBuf,
    /// Keep everything in memory: nothing survives a restart.
    #[arg(long)]
    pub ephemeral: bool,
    /// Seed of the random generator (names, uids).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Serve HTTPS with a generated CA and server certificate, and require
    /// the generated bearer token (both kept in `<data-dir>/pki/`).
    #[arg(long)]
    pub tls: bool,
    /// A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) for
    /// the built-in scheduler; without it, upstream's default profile.
    #[arg(long, value_name = "FILE")]
    pub scheduler_config: Option<PathBuf>,
    #[command(flatten)]
    pub pool: super::emulation::NodePoolArgs,
    /// Terminated pods kept before the pod garbage collector deletes the
    /// oldest (kube-controller-manager's flag of the same name; 0 keeps
    /// them all).
    #[arg(long, default_value_t = kubesim_controllers::podgc::DEFAULT_THRESHOLD)]
    pub terminated_pod_gc_threshold: usize,
    /// Who acts as the emulated nodes' kubelets: builtin, or none
    /// (`kubesim emulate` processes joining this cluster).
    #[arg(long, value_enum, default_value = "builtin")]
    pub emulator: EmulatorChoice,
    /// Who places the pods: builtin, or none (a real kube-scheduler pointed
    /// at this cluster; `external` is accepted too).
    #[arg(long, value_enum, default_value = "builtin")]
    pub scheduler: super::simulate_serve::SchedulerChoice,
    /// The controllers to run, with kube-controller-manager's names and
    /// syntax: `*` (those on by default), `name`, `-name`, or `none`; for
    /// example `*,-deployment-controller`, or `none` beside a real
    /// kube-controller-manager.
    #[arg(long, value_name = "LIST", default_value = "*")]
    pub controllers: String,
    /// How requests are authorized: Node,RBAC, as a real cluster (the
    /// default: kubelets by the Node authorizer, everyone else by RBAC),
    /// RBAC alone, or AlwaysAllow, which lets every authenticated user do
    /// everything.
    #[arg(long, value_enum, default_value = "Node,RBAC")]
    pub authorization_mode: AuthorizationMode,
    /// Whether requests over TLS without credentials are served as
    /// `system:anonymous` (true, upstream's default) or refused with 401.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub anonymous_auth: bool,
    #[command(flatten)]
    pub protection: super::protection::ProtectionArgs,
}

/// Who acts as the kubelets of the emulated nodes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmulatorChoice {
    /// kubesim's emulator, in process.
    Builtin,
    /// None in process: `kubesim emulate` joins the cluster.
    None,
}

/// kube-apiserver's `--authorization-mode`, of the modes kubesim has.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthorizationMode {
    #[value(name = "Node,RBAC", alias = "RBAC,Node")]
    NodeRbac,
    #[value(name = "RBAC")]
    Rbac,
    #[value(name = "AlwaysAllow")]
    AlwaysAllow,
}

/// Builds the store: durable under `data_dir` unless ephemeral.
pub fn open_store(
    data_dir: &Path,
    ephemeral: bool,
    server_registry: &kubesim_core::Registry,
) -> anyhow::Result<Arc<MemStore>> {
    if ephemeral {
        return Ok(Arc::new(MemStore::ephemeral(Options::default())));
    }
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("cannot create data directory {}", data_dir.display()))?;
    let reg = server_registry.clone();
    let indexer = move |resource: &str, bytes: &[u8]| -> kubesim_store::Attrs {
        let Ok(obj) = serde_json::from_slice::<serde_json::Value>(bytes) else {
            return kubesim_store::Attrs::default();
        };
        match resource_for_key(&reg, resource, &obj) {
            Some(r) => attrs::compute(&r, &obj),
            None => kubesim_store::Attrs::default(),
        }
    };
    let store = MemStore::durable(&data_dir.join("state.redb"), Options::default(), &indexer)
        .with_context(|| format!("cannot open the store in {}", data_dir.display()))?;
    Ok(Arc::new(store))
}

/// Finds the resource a stored object belongs to from its storage key and
/// its apiVersion (custom resources are not registered yet while loading).
fn resource_for_key(
    reg: &kubesim_core::Registry,
    key: &str,
    obj: &serde_json::Value,
) -> Option<Arc<kubesim_core::ResourceInfo>> {
    let av = obj.get("apiVersion").and_then(|v| v.as_str()).unwrap_or("");
    let kind = obj.get("kind").and_then(|v| v.as_str()).unwrap_or("");
    if let Some(r) = reg.by_kind(av, kind) {
        if r.storage_key() == key {
            return Some(r);
        }
    }
    let (plural, group) = key.split_once('.').unwrap_or((key, ""));
    let (_, version) = kubesim_core::resource::split_api_version(av);
    Some(Arc::new(kubesim_core::ResourceInfo {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        scope: if obj
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .is_some()
        {
            kubesim_core::Scope::Namespaced
        } else {
            kubesim_core::Scope::Cluster
        },
        short_names: vec![],
        categories: vec![],
        verbs: vec![],
        subresources: vec![],
        crd: Some(kubesim_core::resource::CrdInfo {
            printer_columns: vec![],
            schema: None,
            scale: None,
        }),
    }))
}

pub fn kubeconfig(server_url: &str) -> String {
    kubeconfig_with(server_url, "", "{}")
}

/// A kubeconfig for the HTTPS server: trusts `ca_pem` and sends `token`.
pub fn tls_kubeconfig(server_url: &str, ca_pem: &str, token: &str) -> String {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    kubeconfig_with(
        server_url,
        &format!("\n    certificate-authority-data: {ca}"),
        &format!("\n    token: {token}"),
    )
}

fn kubeconfig_with(server_url: &str, cluster_extra: &str, user: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kubesim\n  cluster:\n    server: {server_url}{cluster_extra}\ncontexts:\n- name: kubesim\n  context:\n    cluster: kubesim\n    user: kubesim\n    namespace: default\ncurrent-context: kubesim\nusers:\n- name: kubesim\n  user: {user}\npreferences: {{}}\n"
    )
}

/// The file beside the store that keeps the key signing service account
/// tokens, readable by its owner only: tokens outlive a restart, and the
/// key is never an object anyone could read through the API.
const SIGNING_KEY: &str = "service-account.key";

/// Signs with the key of an earlier start, or keeps this start's.
fn keep_signing_key(server: &Server, data_dir: &Path) -> anyhow::Result<()> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let path = data_dir.join(SIGNING_KEY);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let key = b64
                .decode(text.trim())
                .ok()
                .filter(|k| !k.is_empty())
                .with_context(|| format!("{} does not hold a key", path.display()))?;
            server.set_token_signing_secret(&key);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            super::pki::write(&path, &b64.encode(server.token_signing_secret()), true)
        }
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Kubeconfigs with client certificates for the control plane's
/// components, each its own identity as on a real cluster, so a real
/// kube-scheduler or kube-controller-manager runs with least privilege.
fn write_component_kubeconfigs(pki: &super::pki::Pki, url: &str, dir: &Path) -> anyhow::Result<()> {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    for (file, user, groups) in [
        (
            "kube-scheduler.kubeconfig",
            "system:kube-scheduler",
            &[][..],
        ),
        (
            "kube-controller-manager.kubeconfig",
            "system:kube-controller-manager",
            &[][..],
        ),
        (
            "admin.kubeconfig",
            "kubernetes-admin",
            &["system:masters"][..],
        ),
    ] {
        let cert = pki.client_cert(user, groups)?;
        let text = kubeconfig_with(
            url,
            &format!("\n    certificate-authority-data: {}", b64(&pki.ca_pem)),
            &format!(
                "\n    client-certificate-data: {}\n    client-key-data: {}",
                b64(&cert.cert_pem),
                b64(&cert.key_pem)
            ),
        );
        super::pki::write(&dir.join(file), &text, true)?;
    }
    Ok(())
}

/// Plain HTTP has no authentication: it is served on loopback only, where
/// it acts as the admin of the cluster.
pub fn check_plain_listen(listen: SocketAddr, flag: &str) -> anyhow::Result<()> {
    if !listen.ip().is_loopback() {
        anyhow::bail!(
            "{flag} {listen} is not a loopback address, and plain HTTP would serve the whole API \
             to every host that reaches it with no authentication; add --tls, or listen on 127.0.0.1"
        );
    }
    Ok(())
}

pub fn run(args: UpArgs) -> anyhow::Result<()> {
    if !args.tls {
        check_plain_listen(args.listen, "--listen")?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(serve(args))
}

/// A cluster started in this process, not yet serving.
pub struct Started {
    pub listener: tokio::net::TcpListener,
    pub app: Arc<App>,
    pub store: Arc<MemStore>,
    pub pki: Option<super::pki::Pki>,
    pub url: String,
    pub kubeconfig: String,
    /// The components' tasks: dropping them stops the components.
    pub components: kubesim_cluster::Running,
}

/// Opens the store and starts every component (controllers, scheduler,
/// emulated kubelets) on the current runtime; the caller serves `app`.
pub async fn start(args: &UpArgs) -> anyhow::Result<Started> {
    let controllers = kubesim_controllers::Controllers::parse(&args.controllers)
        .map_err(|e| anyhow::anyhow!("bad --controllers: {e}"))?;
    let scheduler_config = match &args.scheduler_config {
        Some(path) => kubesim_scheduler::SchedulerConfig::from_file(path)
            .map_err(|e| anyhow::anyhow!("bad --scheduler-config: {e}"))?,
        None => kubesim_scheduler::SchedulerConfig::default(),
    };
    if args.emulator == EmulatorChoice::None && args.pool.nodes > 0 {
        anyhow::bail!("--nodes needs the built-in emulator: with --emulator none, give --nodes to kubesim emulate");
    }
    let (template, stages) = args.pool.read()?;
    let audit = args.protection.audit.auditor()?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr()?;
    let registry = kubesim_core::Registry::new();
    let store = open_store(&args.data_dir, args.ephemeral, &registry)?;
    let cluster = kubesim_cluster::Cluster::bootstrap(kubesim_cluster::ClusterOptions {
        store: store.clone(),
        clock: Clock::wall(),
        rng: Rng::seeded(args.seed),
    })
    .await?;
    let server = cluster.server.clone();
    std::fs::create_dir_all(&args.data_dir)?;
    server.enable_rbac(args.authorization_mode != AuthorizationMode::AlwaysAllow);
    server.enable_node_authorizer(args.authorization_mode == AuthorizationMode::NodeRbac);
    if !args.ephemeral {
        keep_signing_key(&server, &args.data_dir)?;
    }
    let pki = if args.tls {
        Some(super::pki::load_or_create(
            &args.data_dir.join("pki"),
            addr.ip(),
        )?)
    } else {
        None
    };
    // The emulated kubelets run here unless `kubesim emulate` processes
    // act for them; the scheduler unless a real one binds the pods.
    let components = cluster
        .start(kubesim_cluster::Components {
            controllers: Some(kubesim_cluster::ControllerManager {
                options: kubesim_controllers::Options {
                    terminated_pod_gc_threshold: args.terminated_pod_gc_threshold,
                    controllers,
                    ..Default::default()
                },
                root_ca: pki.as_ref().map(|p| p.ca_pem.clone()),
            }),
            scheduler: Some(kubesim_cluster::SchedulerPart {
                config: scheduler_config,
                builtin: args.scheduler == super::simulate_serve::SchedulerChoice::Builtin,
                metrics: None,
            }),
            emulator: (args.emulator == EmulatorChoice::Builtin).then(|| {
                kubesim_emulator::EmulatorConfig {
                    nodes: args.pool.nodes,
                    template,
                    stages,
                    ..Default::default()
                }
            }),
        })
        .await?;
    // kwok's Metric endpoints of the emulated kubelets, and the
    // scheduler's series on /metrics, served by the HTTP server below.
    let kubelet_metrics: Option<Arc<dyn kubesim_apiserver::http::ExtraRoutes>> =
        Some(Arc::new(super::kubelet_metrics::ComponentRoutes {
            kubelets: components.usage.clone(),
            scheduler: components.scheduler_metrics.clone(),
        }));
    let (url, kc_text) = match &pki {
        Some(p) => {
            let url = format!("https://{addr}");
            let kc = tls_kubeconfig(&url, &p.ca_pem, &p.token);
            write_component_kubeconfigs(p, &url, &args.data_dir.join("pki"))?;
            (url, kc)
        }
        None => {
            let url = format!("http://{addr}");
            let kc = kubeconfig(&url);
            (url, kc)
        }
    };
    // The in-process components' calls count as requests, as a real
    // cluster's components' requests do (the scheduler's bindings among
    // them, which ClusterLoader2's scheduling throughput query reads).
    let metrics = Arc::new(Metrics::default());
    server.count_in_process_requests(metrics.clone());
    let app = Arc::new(App {
        server,
        inflight: args.protection.limits(&metrics),
        metrics,
        address: addr.to_string(),
        auth: match &pki {
            Some(p) => kubesim_apiserver::auth::authn::Config {
                anonymous: args.anonymous_auth,
                ..kubesim_apiserver::auth::authn::Config::tls(p.token.clone())
            },
            None => Default::default(),
        },
        extra: kubelet_metrics,
        audit,
    });
    Ok(Started {
        listener,
        app,
        store,
        pki,
        url,
        kubeconfig: kc_text,
        components,
    })
}

async fn serve(args: UpArgs) -> anyhow::Result<()> {
    let Started {
        listener,
        app,
        store,
        pki,
        url,
        kubeconfig: kc_text,
        components: _components,
    } = start(&args).await?;
    let kc = args.data_dir.join("kubeconfig");
    // Written aside and renamed so a reader never sees half a file.
    let tmp = args.data_dir.join("kubeconfig.tmp");
    std::fs::write(&tmp, kc_text)
        .and_then(|()| std::fs::rename(&tmp, &kc))
        .with_context(|| format!("cannot write {}", kc.display()))?;
    let kc_abs = std::fs::canonicalize(&kc).unwrap_or(kc);
    tracing::info!(%url, "kubesim is serving the Kubernetes API");
    println!("export KUBECONFIG={}", kc_abs.display());
    let clock = app.server.clock.clone();
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down");
    };
    match pki {
        Some(p) => serve_tls(listener, router(app), &p, &clock, shutdown).await?,
        None => {
            use axum::serve::ListenerExt;
            // TCP_NODELAY as on the TLS listener below.
            let listener = listener.tap_io(|tcp| {
                if let Err(e) = tcp.set_nodelay(true) {
                    tracing::debug!(error = %e, "cannot set TCP_NODELAY");
                }
            });
            axum::serve(
                listener,
                router(app).into_make_service_with_connect_info::<SocketAddr>(),
            )
            .with_graceful_shutdown(shutdown)
            .await?
        }
    }
    store.close();
    Ok(())
}

/// Serves `app` over TLS until `shutdown` completes. HTTP/2 is offered via
/// ALPN because kubectl prefers it; HTTP/1.1 stays available.
async fn serve_tls(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    pki: &super::pki::Pki,
    clock: &Clock,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let certs = CertificateDer::pem_slice_iter(pki.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .context("cannot parse pki/server.crt")?;
    let key = PrivateKeyDer::from_pem_slice(pki.key_pem.as_bytes())
        .context("cannot parse pki/server.key")?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // Client certificates are checked against the cluster's CA when a
    // client offers one; clients with a token or no credentials offer none.
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(pki.ca_pem.as_bytes()) {
        roots
            .add(ca.context("cannot parse pki/ca.crt")?)
            .context("bad CA certificate")?;
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()
    .context("cannot build the client certificate verifier")?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .context("bad server certificate or key")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

    tokio::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            _ = &mut shutdown => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors and the like: keep serving.
                    tracing::warn!(error = %e, "accept failed");
                    clock.sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // As Go's listeners (kube-apiserver's): small writes leave at
        // once rather than wait behind an unacknowledged one, as the many
        // streams of one HTTP/2 connection would all the time.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(%peer, error = %e, "cannot set TCP_NODELAY");
        }
        let acceptor = acceptor.clone();
        // The peer's address, for the audit log's sourceIPs.
        let app = app
            .clone()
            .layer(axum::Extension(axum::extract::ConnectInfo(peer)));
        tokio::spawn(async move {
            let tls = match acceptor.accept(tcp).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
            };
            // The verified certificate's subject is who every request on
            // this connection comes from.
            let app = match super::client_cert::peer_identity(tls.get_ref().1) {
                Some(id) => app.layer(axum::Extension(id)),
                None => app,
            };
            let service = hyper_util::service::TowerToHyperService::new(app);
            let builder =
                hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
            if let Err(e) = builder
                .serve_connection_with_upgrades(hyper_util::rt::TokioIo::new(tls), service)
                .await
            {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
}
