//! Creating the `--nodes N` emulated nodes.

use std::sync::Arc;

use futures::stream::{self, StreamExt};
use kubesim_core::ApiError;
use kubesim_runtime::{Api, ResourceRef, WriteOptions};

use super::NodeTemplate;

/// Creates, `concurrency` at a time, the first `count` nodes of the
/// template that do not exist yet (a restarted cluster keeps its nodes).
/// Returns how many were created.
pub async fn ensure_nodes(
    api: &Arc<dyn Api>,
    template: &NodeTemplate,
    count: u64,
    concurrency: usize,
) -> Result<u64, ApiError> {
    let nodes = ResourceRef::core("nodes");
    let results: Vec<Result<bool, ApiError>> = stream::iter(0..count)
        .map(|i| {
            let (api, nodes) = (api.clone(), nodes.clone());
            let node = template.node(i);
            async move {
                match api.create(&nodes, "", node, &WriteOptions::default()).await {
                    Ok(_) => Ok(true),
                    Err(e) if e.code == 409 => Ok(false),
                    Err(e) => Err(e),
                }
            }
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let mut created = 0;
    for r in results {
        created += r? as u64;
    }
    Ok(created)
}
