//! `kubesim up`: the API server on the embedded store, in real time.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use kubesim_apiserver::http::{metrics::Metrics, router, App};
use kubesim_apiserver::service::attrs;
use kubesim_apiserver::Server;
use kubesim_runtime::{Clock, Rng};
use kubesim_store::{MemStore, Options, Store};

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
            return Box::new([]);
        };
        match resource_for_key(&reg, resource, &obj) {
            Some(r) => attrs::compute(&r, &obj),
            None => Box::new([]),
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
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kubesim\n  cluster:\n    server: {server_url}\ncontexts:\n- name: kubesim\n  context:\n    cluster: kubesim\n    user: kubesim\n    namespace: default\ncurrent-context: kubesim\nusers:\n- name: kubesim\n  user: {{}}\npreferences: {{}}\n"
    )
}

pub fn run(args: UpArgs) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(serve(args))
}

async fn serve(args: UpArgs) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr()?;
    let registry = kubesim_core::Registry::new();
    let store = open_store(&args.data_dir, args.ephemeral, &registry)?;
    let dyn_store: Arc<dyn Store> = store.clone();
    let server = Server::new(dyn_store, Clock::wall(), Rng::seeded(args.seed));
    server
        .bootstrap()
        .await
        .map_err(|e| anyhow::anyhow!("bootstrap failed: {}", e.message))?;
    // The kube-controller-manager loops the API's semantics rely on
    // (namespace deletion, garbage collection), in process.
    tokio::spawn(kubesim_controllers::run_all(
        Arc::new(kubesim_apiserver::inprocess::InProcess::new(
            server.clone(),
            "kube-controller-manager",
        )),
        server.registry.clone(),
        server.clock.clone(),
    ));
    let url = format!("http://{addr}");
    std::fs::create_dir_all(&args.data_dir)?;
    let kc = args.data_dir.join("kubeconfig");
    std::fs::write(&kc, kubeconfig(&url))
        .with_context(|| format!("cannot write {}", kc.display()))?;
    let kc_abs = std::fs::canonicalize(&kc).unwrap_or(kc);
    tracing::info!(%url, "kubesim is serving the Kubernetes API");
    println!("export KUBECONFIG={}", kc_abs.display());
    let app = Arc::new(App {
        server,
        metrics: Metrics::default(),
        address: addr.to_string(),
    });
    axum::serve(listener, router(app))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("shutting down");
        })
        .await?;
    store.close();
    Ok(())
}
