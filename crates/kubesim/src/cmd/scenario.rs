//! `kubesim scenario start|status`: fixes the start of Apate's planned
//! emulation (tasks fire at their timestamps from it) or shows it.

use std::path::PathBuf;

use anyhow::bail;
use serde_json::json;

use crate::client::{status_message, Client};

#[derive(clap::Args, Debug)]
pub struct ScenarioArgs {
    #[command(subcommand)]
    pub action: Action,
    /// The cluster to act on (default: $KUBECONFIG, then ./.kubesim/kubeconfig).
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
}

#[derive(clap::Subcommand, Debug)]
pub enum Action {
    /// Start the scenario now (restarts it if it was started before).
    Start,
    /// Print the scenario's start time, if it has started.
    Status,
}

const PATH: &str = "/api/v1/namespaces/kube-system/configmaps/kubesim-scenario";

pub fn run(args: ScenarioArgs) -> anyhow::Result<()> {
    let path = args
        .kubeconfig
        .or_else(|| std::env::var_os("KUBECONFIG").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("./.kubesim/kubeconfig"));
    let client = Client::from_kubeconfig(&path)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        match args.action {
            Action::Start => start(&client).await,
            Action::Status => status(&client).await,
        }
    })
}

/// The server's clock decides the start: the ConfigMap's creation (or
/// update) is stamped by it, so no local clock is read here.
async fn start(client: &Client) -> anyhow::Result<()> {
    // Drop any earlier start, then create afresh and take the server's
    // creationTimestamp as the start time.
    let (code, body) = client
        .request("DELETE", PATH, "application/json", None)
        .await?;
    if code != 200 && code != 404 {
        bail!("cannot reset the scenario: {}", status_message(&body));
    }
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "kubesim-scenario", "namespace": "kube-system"}});
    let (code, created) = client
        .request(
            "POST",
            "/api/v1/namespaces/kube-system/configmaps",
            "application/json",
            Some(&cm),
        )
        .await?;
    if code != 201 {
        bail!("cannot start the scenario: {}", status_message(&created));
    }
    let at = created["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let patch = json!({"data": {"startTime": at}});
    let (code, body) = client
        .request("PATCH", PATH, "application/merge-patch+json", Some(&patch))
        .await?;
    if code != 200 {
        bail!("cannot start the scenario: {}", status_message(&body));
    }
    println!("scenario started at {at}");
    Ok(())
}

async fn status(client: &Client) -> anyhow::Result<()> {
    let (code, body) = client
        .request("GET", PATH, "application/json", None)
        .await?;
    match code {
        200 => match body["data"]["startTime"].as_str() {
            Some(t) => println!("scenario started at {t}"),
            None => println!("scenario not started"),
        },
        404 => println!("scenario not started"),
        _ => bail!("cannot read the scenario: {}", status_message(&body)),
    }
    Ok(())
}
