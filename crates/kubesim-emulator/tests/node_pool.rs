//! The node pool and its heartbeats against the in-process server in
//! simulated time, with the node lifecycle controller watching.

use std::sync::Arc;
use std::time::Duration;

use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_core::meta;
use kubesim_emulator::managed::NodeSelector;
use kubesim_emulator::nodes::{ensure_nodes, LeaseRenewer, NodeTemplate};
use kubesim_runtime::{Api, Clock, Informers, ListOptions, ResourceRef, Rng};
use kubesim_store::{MemStore, Store};
use parking_lot::Mutex;

async fn server() -> (Arc<dyn Api>, Clock, Arc<Server>) {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let clock = Clock::simulated("2026-01-01T00:00:00Z".parse().unwrap());
    let server = Server::new(store, clock.clone(), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    let api: Arc<dyn Api> = Arc::new(InProcess::new(server.clone(), "test"));
    (api, clock, server)
}

fn leases() -> ResourceRef {
    ResourceRef::new("coordination.k8s.io", "v1", "leases")
}

async fn renew_times(api: &Arc<dyn Api>) -> Vec<(String, String)> {
    let l = api
        .list(&leases(), "kube-node-lease", &ListOptions::default())
        .await
        .unwrap();
    l["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                meta::name(l).to_string(),
                l["spec"]["renewTime"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

async fn ready(api: &Arc<dyn Api>, node: &str) -> String {
    let n = api
        .get(&ResourceRef::core("nodes"), "", node)
        .await
        .unwrap();
    n["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .map(|c| c["status"].as_str().unwrap_or("").to_string())
        .unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn leases_are_renewed_until_a_node_is_silenced() {
    let (api, clock, server) = server().await;
    let template = NodeTemplate::default();
    assert_eq!(ensure_nodes(&api, &template, 3, 2).await.unwrap(), 3);
    // A second pass (a restart) creates nothing.
    assert_eq!(ensure_nodes(&api, &template, 3, 2).await.unwrap(), 0);
    // A node nobody marked as emulated gets no lease.
    let mut real = template.node(9);
    real["metadata"]["name"] = "real".into();
    real["metadata"]["annotations"] = serde_json::json!({});
    api.create(&ResourceRef::core("nodes"), "", real, &Default::default())
        .await
        .unwrap();

    let silenced: Arc<Mutex<Vec<String>>> = Arc::default();
    let s = silenced.clone();
    let informers = Informers::new(api.clone(), clock.clone());
    let renewer = LeaseRenewer::new(
        api.clone(),
        informers.clone(),
        clock.clone(),
        NodeSelector::marked(),
    )
    .with_silenced(Arc::new(move |n| s.lock().iter().any(|x| x == n)));
    let runner = tokio::spawn(async move { tokio::join!(informers.run(), renewer.run()) });
    let controllers = tokio::spawn(kubesim_controllers::run_all(
        Arc::new(InProcess::new(server.clone(), "kube-controller-manager")),
        server.registry.clone(),
        clock.clone(),
        None,
    ));

    clock.sleep(Duration::from_secs(11)).await;
    let first = renew_times(&api).await;
    let names: Vec<&str> = first.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "kubesim-node-00000",
            "kubesim-node-00001",
            "kubesim-node-00002"
        ]
    );
    clock.sleep(Duration::from_secs(10)).await;
    let second = renew_times(&api).await;
    for ((n, a), (_, b)) in first.iter().zip(&second) {
        assert!(b > a, "{n} renewed: {a} then {b}");
    }

    // Silence one node: its lease stops; after the 40 s grace the node
    // lifecycle controller reports it Unknown while the others stay fine.
    silenced.lock().push("kubesim-node-00001".into());
    clock.sleep(Duration::from_secs(10)).await;
    let third = renew_times(&api).await;
    assert_eq!(third[1], second[1]);
    assert!(third[0].1 > second[0].1);
    clock.sleep(Duration::from_secs(60)).await;
    assert_eq!(ready(&api, "kubesim-node-00001").await, "Unknown");
    assert_ne!(ready(&api, "kubesim-node-00000").await, "Unknown");
    let leases_now = renew_times(&api).await;
    assert!(leases_now.iter().all(|(n, _)| n != "real"));

    // Deleting a node stops its renewals (its lease goes with it, owned).
    api.delete(
        &ResourceRef::core("nodes"),
        "",
        "kubesim-node-00002",
        &Default::default(),
    )
    .await
    .unwrap();
    clock.sleep(Duration::from_secs(30)).await;
    let names: Vec<String> = renew_times(&api)
        .await
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert!(
        !names.contains(&"kubesim-node-00002".to_string()),
        "{names:?}"
    );
    runner.abort();
    controllers.abort();
}

/// Names of the CSINodes and the node each is owned by.
async fn csi_nodes(api: &Arc<dyn Api>) -> Vec<(String, String)> {
    let l = api
        .list(
            &ResourceRef::new("storage.k8s.io", "v1", "csinodes"),
            "",
            &ListOptions::default(),
        )
        .await
        .unwrap();
    l["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                meta::name(c).to_string(),
                c["metadata"]["ownerReferences"][0]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn emulated_nodes_publish_csinodes_that_go_with_them() {
    let (api, clock, server) = server().await;
    let controllers = tokio::spawn(kubesim_controllers::run_all(
        Arc::new(InProcess::new(server.clone(), "kube-controller-manager")),
        server.registry.clone(),
        clock.clone(),
        None,
    ));
    let emulator = tokio::spawn(kubesim_emulator::run(
        Arc::new(InProcess::new(server.clone(), "kubesim-emulator")),
        clock.clone(),
        Rng::seeded(2),
        kubesim_emulator::EmulatorConfig {
            nodes: 2,
            ..Default::default()
        },
    ));
    // A node nobody marked as emulated has a kubelet of its own.
    let mut real = NodeTemplate::default().node(9);
    real["metadata"]["name"] = "real".into();
    real["metadata"]["annotations"] = serde_json::json!({});
    api.create(&ResourceRef::core("nodes"), "", real, &Default::default())
        .await
        .unwrap();
    clock.sleep(Duration::from_secs(5)).await;
    let template = NodeTemplate::default();
    let want: Vec<(String, String)> = (0..2)
        .map(|i| (template.name(i), template.name(i)))
        .collect();
    assert_eq!(csi_nodes(&api).await, want);
    let csinode = api
        .get(
            &ResourceRef::new("storage.k8s.io", "v1", "csinodes"),
            "",
            &template.name(0),
        )
        .await
        .unwrap();
    assert_eq!(csinode["spec"]["drivers"], serde_json::json!([]));

    // Deleting the node takes its CSINode with it (garbage collector).
    api.delete(
        &ResourceRef::core("nodes"),
        "",
        &template.name(0),
        &Default::default(),
    )
    .await
    .unwrap();
    clock.sleep(Duration::from_secs(5)).await;
    assert_eq!(csi_nodes(&api).await, want[1..].to_vec());
    controllers.abort();
    emulator.abort();
}
