//! The scheduler's view of the cluster: a [`NodeInfo`] per node with the
//! pods bound to it and the pods the scheduler has assumed there (placed,
//! binding in flight). Fed by the informers; read through snapshots.
//!
//! Snapshots are cheap: node infos are shared (`Arc`) and copied only when
//! changed while a snapshot holds them, and [`Cache::update_snapshot`]
//! replaces only the nodes changed since the last call.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_runtime::ObjectKey;
use parking_lot::Mutex;
use serde_json::Value;

use crate::framework::{NodeInfo, PodInfo, Snapshot};

struct PodState {
    node: String,
    info: Arc<PodInfo>,
    assumed: bool,
}

#[derive(Default)]
struct Inner {
    nodes: BTreeMap<String, Arc<NodeInfo>>,
    pods: BTreeMap<ObjectKey, PodState>,
    /// Pods bound to nodes the cache has not seen yet.
    orphans: BTreeMap<String, Vec<Arc<PodInfo>>>,
    /// Nodes changed since the last `update_snapshot`.
    dirty: BTreeSet<String>,
    /// A node was added or removed: the snapshot's order must be rebuilt.
    structural: bool,
    namespaces: BTreeMap<String, BTreeMap<String, String>>,
    namespaces_dirty: bool,
    pdbs: BTreeMap<ObjectKey, Arc<Value>>,
    pdbs_dirty: bool,
    /// PersistentVolumeClaims with the ReadWriteOncePod access mode.
    rwop_claims: Arc<BTreeSet<ObjectKey>>,
    claims_dirty: bool,
    /// How many nodes report each image (ImageLocality spreads scores).
    image_nodes: Arc<BTreeMap<String, usize>>,
    images_dirty: bool,
}

/// The scheduler cache. Cheap to share (`Arc<Cache>`).
#[derive(Default)]
pub struct Cache {
    inner: Mutex<Inner>,
}

/// Whether a pod has finished and no longer holds resources.
pub fn is_terminal(pod: &Value) -> bool {
    matches!(
        meta::pointer(pod, "/status/phase").and_then(Value::as_str),
        Some("Succeeded") | Some("Failed")
    )
}

impl Inner {
    fn node_mut(&mut self, name: &str) -> Option<&mut NodeInfo> {
        let n = self.nodes.get_mut(name)?;
        self.dirty.insert(name.to_string());
        Some(Arc::make_mut(n))
    }

    fn place(&mut self, node: &str, info: Arc<PodInfo>) {
        match self.node_mut(node) {
            Some(n) => n.add_pod(info),
            None => self.orphans.entry(node.to_string()).or_default().push(info),
        }
    }

    fn unplace(&mut self, node: &str, uid: &str) {
        if let Some(n) = self.node_mut(node) {
            n.remove_pod(uid);
        } else if let Some(list) = self.orphans.get_mut(node) {
            list.retain(|p| p.uid != uid);
            if list.is_empty() {
                self.orphans.remove(node);
            }
        }
    }

    fn count_images(&mut self, images: &BTreeMap<String, i64>, delta: isize) {
        if images.is_empty() {
            return;
        }
        let counts = Arc::make_mut(&mut self.image_nodes);
        for name in images.keys() {
            let c = counts.entry(name.clone()).or_default();
            *c = c.saturating_add_signed(delta);
            if *c == 0 {
                counts.remove(name);
            }
        }
        self.images_dirty = true;
    }
}

impl Cache {
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    pub fn add_or_update_node(&self, node: Arc<Value>) {
        let mut g = self.inner.lock();
        let name = meta::name(&node).to_string();
        if g.nodes.contains_key(&name) {
            let old_images = g.nodes[&name].images.clone();
            g.count_images(&old_images, -1);
            let n = g.node_mut(&name).expect("present");
            n.set_node(node);
            let images = n.images.clone();
            g.count_images(&images, 1);
            return;
        }
        let mut info = NodeInfo::from_node(node);
        for p in g.orphans.remove(&name).unwrap_or_default() {
            info.add_pod(p);
        }
        let images = info.images.clone();
        g.count_images(&images, 1);
        g.nodes.insert(name.clone(), Arc::new(info));
        g.dirty.insert(name);
        g.structural = true;
    }

    pub fn remove_node(&self, name: &str) {
        let mut g = self.inner.lock();
        if let Some(n) = g.nodes.remove(name) {
            g.count_images(&n.images, -1);
            // Its pods wait for a node of that name to come back, as bound
            // pods of a missing node still exist.
            if !n.pods.is_empty() {
                g.orphans.insert(name.to_string(), n.pods.clone());
            }
            g.structural = true;
        }
    }

    /// An assigned, non-terminal pod as the informer shows it: added,
    /// updated, or an assumed pod confirmed.
    pub fn add_or_update_pod(&self, pod: Arc<Value>) {
        if self.confirm(&pod) || self.update_status(&pod) {
            return;
        }
        let info = Arc::new(PodInfo::from_pod(pod));
        let mut g = self.inner.lock();
        let key = info.key.clone();
        if let Some(old) = g.pods.remove(&key) {
            let uid = old.info.uid.clone();
            g.unplace(&old.node, &uid);
        }
        let node = info.node_name.clone();
        g.place(&node, info.clone());
        g.pods.insert(
            key,
            PodState {
                node,
                info,
                assumed: false,
            },
        );
    }

    /// The binding of an assumed pod seen: the assumption stands as it
    /// was, so nothing is recomputed and no node becomes dirty. Only the
    /// first sight of the bound pod is taken so; later changes (its status,
    /// its labels) are read in full. False when `pod` is not that.
    fn confirm(&self, pod: &Value) -> bool {
        let key = ObjectKey::of(pod);
        let mut g = self.inner.lock();
        let Some(st) = g.pods.get_mut(&key) else {
            return false;
        };
        let same = st.assumed
            && st.info.uid == meta::uid(pod)
            && meta::pointer(pod, "/spec/nodeName").and_then(Value::as_str)
                == Some(st.node.as_str())
            && meta::has_labels(pod, &st.info.labels);
        if same {
            st.assumed = false;
        }
        same
    }

    /// A bound pod whose change leaves its accounting as it was (a status
    /// write): the new version replaces the old one on its node without
    /// computing or counting anything again. False when `pod` is not that.
    fn update_status(&self, pod: &Value) -> bool {
        let key = ObjectKey::of(pod);
        let mut g = self.inner.lock();
        let Some(st) = g.pods.get(&key) else {
            return false;
        };
        let node = meta::pointer(pod, "/spec/nodeName").and_then(Value::as_str);
        if st.assumed || node != Some(st.node.as_str()) {
            return false;
        }
        let Some(info) = st.info.status_update(pod) else {
            return false;
        };
        let (info, node) = (Arc::new(info), st.node.clone());
        let replaced = match g.node_mut(&node) {
            Some(n) => n.replace_pod(info.clone()),
            None => match g.orphans.get_mut(&node) {
                Some(list) => match list.iter().position(|p| p.uid == info.uid) {
                    Some(i) => {
                        list.remove(i);
                        list.push(info.clone());
                        true
                    }
                    None => false,
                },
                None => false,
            },
        };
        if !replaced {
            return false;
        }
        if let Some(st) = g.pods.get_mut(&key) {
            st.info = info;
        }
        true
    }

    /// Forgets a pod; false when the cache did not hold it.
    pub fn remove_pod(&self, key: &ObjectKey) -> bool {
        let mut g = self.inner.lock();
        let Some(old) = g.pods.remove(key) else {
            return false;
        };
        let uid = old.info.uid.clone();
        g.unplace(&old.node, &uid);
        true
    }

    /// Counts `pod` on `node` before the binding is confirmed, so the next
    /// cycles see the space taken.
    pub fn assume(&self, pod: &PodInfo, node: &str) -> Arc<PodInfo> {
        let info = Arc::new(pod.placed_on(node));
        let mut g = self.inner.lock();
        if let Some(old) = g.pods.remove(&info.key) {
            let uid = old.info.uid.clone();
            g.unplace(&old.node, &uid);
        }
        g.place(node, info.clone());
        g.pods.insert(
            info.key.clone(),
            PodState {
                node: node.to_string(),
                info: info.clone(),
                assumed: true,
            },
        );
        info
    }

    /// Undoes [`assume`](Self::assume) after a failed binding; a pod the
    /// informer has since shown bound is kept.
    pub fn forget(&self, key: &ObjectKey) {
        let mut g = self.inner.lock();
        if g.pods.get(key).is_some_and(|s| s.assumed) {
            if let Some(old) = g.pods.remove(key) {
                let uid = old.info.uid.clone();
                g.unplace(&old.node, &uid);
            }
        }
    }

    /// How many bound or assumed pods of namespace `ns` satisfy `pred`
    /// (the members of a pod group already placed).
    pub fn count_placed(&self, ns: &str, pred: impl Fn(&PodInfo) -> bool) -> usize {
        let g = self.inner.lock();
        g.pods
            .range(ObjectKey::new(ns, "")..)
            .take_while(|(k, _)| k.namespace == ns)
            .filter(|(_, s)| pred(&s.info))
            .count()
    }

    pub fn is_assumed(&self, key: &ObjectKey) -> bool {
        self.inner.lock().pods.get(key).is_some_and(|s| s.assumed)
    }

    pub fn set_namespace(&self, ns: &Value, deleted: bool) {
        let mut g = self.inner.lock();
        let name = meta::name(ns).to_string();
        if deleted {
            g.namespaces.remove(&name);
        } else {
            g.namespaces.insert(name, meta::labels(ns));
        }
        g.namespaces_dirty = true;
    }

    pub fn set_pdb(&self, pdb: Arc<Value>, deleted: bool) {
        let mut g = self.inner.lock();
        let key = ObjectKey::of(&pdb);
        if deleted {
            g.pdbs.remove(&key);
        } else {
            g.pdbs.insert(key, pdb);
        }
        g.pdbs_dirty = true;
    }

    /// Follows a PersistentVolumeClaim: only whether it is ReadWriteOncePod
    /// matters to scheduling, so only those claims are kept.
    pub fn set_claim(&self, pvc: &Value, deleted: bool) {
        let rwop = !deleted
            && pvc
                .pointer("/spec/accessModes")
                .and_then(Value::as_array)
                .is_some_and(|m| m.iter().any(|m| m == "ReadWriteOncePod"));
        let key = ObjectKey::of(pvc);
        let mut g = self.inner.lock();
        if g.rwop_claims.contains(&key) == rwop {
            return;
        }
        let claims = Arc::make_mut(&mut g.rwop_claims);
        if rwop {
            claims.insert(key);
        } else {
            claims.remove(&key);
        }
        g.claims_dirty = true;
    }

    pub fn node_count(&self) -> usize {
        self.inner.lock().nodes.len()
    }

    /// A fresh, complete snapshot.
    pub fn snapshot(&self) -> Snapshot {
        let g = self.inner.lock();
        let mut s = Snapshot::default();
        fill_all(&g, &mut s);
        s
    }

    /// Brings `snap` up to date, copying only what changed since the last
    /// call. Meant for one consumer (the scheduling loop).
    pub fn update_snapshot(&self, snap: &mut Snapshot) {
        let mut g = self.inner.lock();
        if g.structural || snap.nodes.len() != g.nodes.len() {
            snap.nodes.clear();
            snap.index.clear();
            for (i, (name, n)) in g.nodes.iter().enumerate() {
                snap.nodes.push(n.clone());
                snap.index.insert(name.clone(), i);
            }
            snap.recount();
        } else {
            for name in &g.dirty {
                if let (Some(&i), Some(n)) = (snap.index.get(name), g.nodes.get(name)) {
                    snap.set_node(i, n.clone());
                }
            }
        }
        g.structural = false;
        g.dirty.clear();
        if g.namespaces_dirty {
            snap.namespace_labels = g.namespaces.clone();
            g.namespaces_dirty = false;
        }
        if g.pdbs_dirty {
            snap.pdbs = g.pdbs.values().cloned().collect();
            g.pdbs_dirty = false;
        }
        if g.images_dirty {
            snap.image_nodes = g.image_nodes.clone();
            g.images_dirty = false;
        }
        if g.claims_dirty {
            snap.rwop_claims = g.rwop_claims.clone();
            g.claims_dirty = false;
        }
    }
}

fn fill_all(g: &Inner, s: &mut Snapshot) {
    for (i, (name, n)) in g.nodes.iter().enumerate() {
        s.nodes.push(n.clone());
        s.index.insert(name.clone(), i);
    }
    s.recount();
    s.namespace_labels = g.namespaces.clone();
    s.pdbs = g.pdbs.values().cloned().collect();
    s.image_nodes = g.image_nodes.clone();
    s.rwop_claims = g.rwop_claims.clone();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str) -> Arc<Value> {
        Arc::new(
            json!({"metadata": {"name": name}, "status": {"allocatable": {"cpu": "4", "pods": "10"}}}),
        )
    }

    fn pod(name: &str, node: &str) -> Arc<Value> {
        Arc::new(
            json!({"metadata": {"name": name, "namespace": "d", "uid": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}),
        )
    }

    #[test]
    fn snapshots_keep_the_affinity_totals() {
        let c = Cache::new();
        c.add_or_update_node(node("n1"));
        c.add_or_update_node(node("n2"));
        let mut snap = Snapshot::default();
        c.update_snapshot(&mut snap);
        assert_eq!(
            (snap.pods_with_affinity, snap.pods_with_required_anti),
            (0, 0)
        );
        let mut anti = (*pod("a", "n2")).clone();
        anti["spec"]["affinity"] = json!({"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k"}]}});
        c.add_or_update_pod(Arc::new(anti));
        c.add_or_update_pod(pod("b", "n1"));
        c.update_snapshot(&mut snap);
        assert_eq!(
            (snap.pods_with_affinity, snap.pods_with_required_anti),
            (1, 1)
        );
        c.remove_pod(&ObjectKey::new("d", "a"));
        c.update_snapshot(&mut snap);
        assert_eq!(
            (snap.pods_with_affinity, snap.pods_with_required_anti),
            (0, 0)
        );
        assert_eq!(c.snapshot().pods_with_affinity, 0);
    }

    #[test]
    fn assume_confirm_and_forget() {
        let c = Cache::new();
        c.add_or_update_node(node("n1"));
        let mut snap = Snapshot::default();
        c.update_snapshot(&mut snap);
        let before = snap.nodes[0].clone();
        let p = PodInfo::from_pod(pod("a", ""));
        c.assume(&p, "n1");
        c.update_snapshot(&mut snap);
        assert_eq!(snap.nodes[0].requested.milli_cpu, 1000);
        // The old snapshot's node is untouched (copy on write).
        assert_eq!(before.requested.milli_cpu, 0);
        assert!(c.is_assumed(&p.key));
        // The informer shows it bound: confirmed, counted once.
        c.add_or_update_pod(pod("a", "n1"));
        assert!(!c.is_assumed(&p.key));
        c.update_snapshot(&mut snap);
        assert_eq!(snap.nodes[0].requested.milli_cpu, 1000);
        assert_eq!(snap.nodes[0].pods.len(), 1);
        // Forgetting a confirmed pod does nothing.
        c.forget(&p.key);
        c.update_snapshot(&mut snap);
        assert_eq!(snap.nodes[0].pods.len(), 1);
        // A second pod assumed and then forgotten leaves no trace.
        let q = PodInfo::from_pod(pod("b", ""));
        c.assume(&q, "n1");
        c.forget(&q.key);
        c.update_snapshot(&mut snap);
        assert_eq!(snap.nodes[0].requested.milli_cpu, 1000);
    }

    #[test]
    fn status_writes_replace_the_view_without_recounting() {
        let c = Cache::new();
        c.add_or_update_node(node("n1"));
        let a = PodInfo::from_pod(pod("a", ""));
        c.assume(&a, "n1");
        c.add_or_update_pod(pod("a", "n1"));
        c.add_or_update_pod(pod("b", "n1"));
        let mut running = (*pod("a", "n1")).clone();
        running["metadata"]["resourceVersion"] = json!("7");
        running["status"] = json!({"phase": "Running", "startTime": "2026-01-01T00:00:00Z"});
        c.add_or_update_pod(Arc::new(running));
        let mut snap = Snapshot::default();
        c.update_snapshot(&mut snap);
        let n = &snap.nodes[0];
        assert_eq!(n.requested.milli_cpu, 2000);
        // Moved last, as a removal and an addition would have done.
        let names: Vec<&str> = n.pods.iter().map(|p| p.name()).collect();
        assert_eq!(names, ["b", "a"]);
        assert_eq!(&*n.pods[1].pod.start_time, "2026-01-01T00:00:00Z");
        assert_eq!(&*n.pods[1].pod.resource_version, "7");
        // A changed request is counted anew.
        let mut bigger = (*pod("a", "n1")).clone();
        bigger["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("3");
        c.add_or_update_pod(Arc::new(bigger));
        c.update_snapshot(&mut snap);
        assert_eq!(snap.nodes[0].requested.milli_cpu, 4000);
        assert_eq!(snap.nodes[0].pods.len(), 2);
    }

    #[test]
    fn only_read_write_once_pod_claims_are_kept() {
        let c = Cache::new();
        let pvc = |name: &str, modes: Value| {
            json!({"metadata": {"name": name, "namespace": "d"},
                "spec": {"accessModes": modes}})
        };
        let mut snap = Snapshot::default();
        c.set_claim(&pvc("rwo", json!(["ReadWriteOnce"])), false);
        c.set_claim(&pvc("one", json!(["ReadWriteOncePod"])), false);
        c.update_snapshot(&mut snap);
        assert_eq!(
            snap.rwop_claims.iter().collect::<Vec<_>>(),
            [&ObjectKey::new("d", "one")]
        );
        c.set_claim(&pvc("one", json!(["ReadWriteOncePod"])), true);
        c.update_snapshot(&mut snap);
        assert!(snap.rwop_claims.is_empty());
    }

    #[test]
    fn pods_of_unknown_nodes_wait_for_them() {
        let c = Cache::new();
        c.add_or_update_pod(pod("a", "n2"));
        c.add_or_update_node(node("n1"));
        c.add_or_update_node(node("n2"));
        let s = c.snapshot();
        assert_eq!(s.nodes.len(), 2);
        assert_eq!(s.node("n2").unwrap().pods.len(), 1);
        c.remove_pod(&ObjectKey::new("d", "a"));
        c.remove_node("n1");
        let mut snap = s.clone();
        c.update_snapshot(&mut snap);
        assert_eq!(snap.nodes.len(), 1);
        assert_eq!(snap.node("n2").unwrap().pods.len(), 0);
    }
}
