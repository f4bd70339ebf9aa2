//! ImageLocality: prefers nodes that already have the pod's images, more
//! so for big images, less so for images every node has anyway.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::framework::{
    CycleState, NodeInfo, Plugin, PodInfo, Points, Snapshot, Status, MAX_NODE_SCORE,
};

pub const NAME: &str = "ImageLocality";

const MB: i64 = 1024 * 1024;
/// Below this total the score is 0 (small images pull fast anyway).
const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container: beyond this the score is 100.
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

pub struct ImageLocality;

struct Spread {
    total_nodes: usize,
    image_nodes: Arc<BTreeMap<String, usize>>,
    images: Vec<String>,
}

/// An image reference without tag or digest means `:latest`.
pub fn normalized(image: &str) -> String {
    let slash = image.rfind('/').map(|i| i as i64).unwrap_or(-1);
    let colon = image.rfind(':').map(|i| i as i64).unwrap_or(-1);
    if colon <= slash {
        format!("{image}:latest")
    } else {
        image.to_string()
    }
}

/// The score from the sum of the scaled image sizes present: clamp the sum
/// to [23MB, 1000MB × containers] and map that range linearly onto 0..100.
pub fn priority(sum: i64, containers: i64) -> i64 {
    let max = MAX_CONTAINER_THRESHOLD * containers.max(1);
    let sum = sum.clamp(MIN_THRESHOLD, max);
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max - MIN_THRESHOLD)
}

impl Plugin for ImageLocality {
    fn name(&self) -> &'static str {
        NAME
    }
    fn points(&self) -> Points {
        Points {
            pre_score: true,
            score: true,
            ..Points::default()
        }
    }

    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snap: &Snapshot,
        _: &[&NodeInfo],
    ) -> Status {
        let images: Vec<String> = ["initContainers", "containers"]
            .iter()
            .flat_map(|f| {
                pod.pod
                    .spec(f)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .map(|c| normalized(c.get("image").and_then(Value::as_str).unwrap_or("")))
            .collect();
        state.write(
            NAME,
            Spread {
                total_nodes: snap.nodes.len(),
                image_nodes: snap.image_nodes.clone(),
                images,
            },
        );
        Status::success()
    }

    /// Each of the pod's images present on the node adds its size times
    /// the share of nodes that have it; then [`priority`].
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> i64 {
        if node.images.is_empty() {
            // Nothing present: the clamped sum is the minimum, scoring 0.
            return 0;
        }
        let Some(s) = state.read::<Spread>(NAME) else {
            return 0;
        };
        if s.total_nodes == 0 {
            return 0;
        }
        let mut sum = 0i64;
        for img in &s.images {
            if let Some(&size) = node.images.get(img) {
                let have = s.image_nodes.get(img).copied().unwrap_or(1);
                sum += (size as f64 * (have as f64 / s.total_nodes as f64)) as i64;
            }
        }
        priority(sum, s.images.len() as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{node, pod};
    use serde_json::json;

    #[test]
    fn names_default_to_latest() {
        assert_eq!(normalized("nginx"), "nginx:latest");
        assert_eq!(
            normalized("localhost:5000/app"),
            "localhost:5000/app:latest"
        );
        assert_eq!(normalized("nginx:1.2"), "nginx:1.2");
    }

    #[test]
    fn scaled_sum_score() {
        let p = pod(
            json!({"containers": [{"name": "a", "image": "big:1"}, {"name": "b", "image": "small"}]}),
        );
        let n = node(
            "n",
            json!({"status": {"images": [
            {"names": ["big:1"], "sizeBytes": 300 * MB},
            {"names": ["small:latest"], "sizeBytes": 10 * MB}]}}),
        );
        let snap = Snapshot {
            nodes: vec![
                Arc::new(n.clone()),
                Arc::new(node("m", json!({}))),
                Arc::new(node("o", json!({}))),
                Arc::new(node("q", json!({}))),
            ],
            image_nodes: Arc::new(
                [("big:1".to_string(), 2), ("small:latest".to_string(), 4)].into(),
            ),
            ..Snapshot::default()
        };
        let mut s = CycleState::default();
        ImageLocality.pre_score(&mut s, &p, &snap, &[]);
        // big: 300MB * 2/4 = 150MB; small: 10MB * 4/4 = 10MB; sum 160MB.
        // Two containers: range 23MB..2000MB; 100 * (160 - 23) / 1977 = 6.9 -> 6.
        assert_eq!(ImageLocality.score(&s, &p, &n), 6);
        assert_eq!(ImageLocality.score(&s, &p, &node("m", json!({}))), 0);
        assert_eq!(priority(5000 * MB, 2), 100);
    }
}
