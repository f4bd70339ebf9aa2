//! Shard membership through Leases, as client-go's leader election does it
//! for one lock per shard: shard `i` holds the Lease `kubesim-emulate-<group>-<i>`
//! and renews it; a Lease is live while its resourceVersion was seen to
//! change within its duration, measured on this process's own clock, so
//! clocks of different machines never need to agree. A second process
//! started for a shard already held waits as a standby until the holder
//! stops renewing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::meta;
use kubesim_runtime::{Api, Clock, ListOptions, ResourceRef, WriteOptions};
use serde_json::{json, Value};
use tokio::time::Instant;

use super::Shards;

const GROUP_LABEL: &str = "kubesim.io/emulate-group";
const SHARD_LABEL: &str = "kubesim.io/emulate-shard";

/// Where and how long the shard Leases are held.
#[derive(Debug, Clone)]
pub struct ShardLease {
    pub namespace: String,
    /// Emulators of one group share the nodes; several groups may run
    /// against one cluster (with node rules that do not overlap).
    pub group: String,
    /// This process, as written in `holderIdentity`.
    pub identity: String,
    /// A shard whose Lease did not change for this long is taken as dead.
    pub duration: Duration,
}

impl ShardLease {
    fn name(&self, shard: u32) -> String {
        format!("kubesim-emulate-{}-{shard}", self.group)
    }

    /// Renewals come three times a lease: a shard survives two lost ones.
    fn period(&self) -> Duration {
        self.duration / 3
    }
}

fn leases() -> ResourceRef {
    ResourceRef::new("coordination.k8s.io", "v1", "leases")
}

/// Holds this shard's Lease and keeps `shards`' live set current, until
/// dropped.
pub async fn hold(api: Arc<dyn Api>, clock: Clock, shards: Arc<Shards>, lease: ShardLease) {
    let mut seen: BTreeMap<String, (String, Instant)> = BTreeMap::new();
    let mut held = false;
    let mut renewed: Option<Instant> = None;
    loop {
        let now = clock.instant();
        let h = match acquire(&*api, &clock, &shards, &lease, &seen, now).await {
            Ok(h) => {
                renewed = h.then_some(now);
                h
            }
            // A renewal that failed: the others will take the shard over
            // once its Lease has run out, so this process stops acting
            // for it then too (client-go's leader gives up at its renew
            // deadline the same way); until then it keeps its view.
            Err(e) => {
                tracing::warn!(error = %e.message, "cannot renew the shard lease");
                renewed.is_some_and(|at| now - at < lease.duration)
            }
        };
        if h != held {
            tracing::info!(shard = shards.me(), held = h, "shard lease");
        }
        held = h;
        match live(&*api, &lease, &mut seen, now).await {
            Ok(mut members) => {
                // This shard counts by what this process holds, not by what
                // the list says of its Lease.
                members.retain(|&i| i != shards.me());
                if held {
                    members.push(shards.me());
                }
                if shards.set_members(members) {
                    tracing::info!(shard = shards.me(), members = ?shards.members(), "shards changed");
                }
            }
            Err(e) => tracing::warn!(error = %e.message, "cannot list the shard leases"),
        }
        clock.sleep(lease.period()).await;
    }
}

/// Takes or renews this shard's Lease; whether this process holds it.
async fn acquire(
    api: &dyn Api,
    clock: &Clock,
    shards: &Shards,
    lease: &ShardLease,
    seen: &BTreeMap<String, (String, Instant)>,
    now: Instant,
) -> Result<bool, kubesim_core::ApiError> {
    let name = lease.name(shards.me());
    let stamp = meta::format_micro_time(clock.now());
    let secs = lease.duration.as_secs().max(1);
    let current = match api.get(&leases(), &lease.namespace, &name).await {
        Ok(v) => v,
        Err(e) if e.code == 404 => {
            let obj = json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": lease.namespace,
                    "labels": {GROUP_LABEL: lease.group, SHARD_LABEL: shards.me().to_string()}},
                "spec": {"holderIdentity": lease.identity, "leaseDurationSeconds": secs,
                    "acquireTime": stamp, "renewTime": stamp, "leaseTransitions": 0},
            });
            return match api
                .create(&leases(), &lease.namespace, obj, &WriteOptions::default())
                .await
            {
                Ok(_) => Ok(true),
                Err(e) if e.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        }
        Err(e) => return Err(e),
    };
    let holder = meta::path(&current, "spec.holderIdentity")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mine = holder == lease.identity;
    let expired = holder.is_empty()
        || seen.get(&name).is_some_and(|(rv, at)| {
            rv == meta::resource_version(&current) && now - *at >= lease.duration
        });
    if !mine && !expired {
        return Ok(false);
    }
    let mut next = current.clone();
    let spec = &mut next["spec"];
    spec["holderIdentity"] = json!(lease.identity);
    spec["leaseDurationSeconds"] = json!(secs);
    spec["renewTime"] = json!(stamp);
    if !mine {
        spec["acquireTime"] = json!(stamp);
        let transitions = spec["leaseTransitions"].as_i64().unwrap_or(0);
        spec["leaseTransitions"] = json!(transitions + 1);
    }
    // The update carries the resourceVersion read: of two processes taking
    // one shard at once, one gets a conflict.
    match api
        .update(
            &leases(),
            &lease.namespace,
            next,
            None,
            &WriteOptions::default(),
        )
        .await
    {
        Ok(_) => Ok(true),
        Err(e) if e.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// The shards whose Leases are held and were seen to change within their
/// duration.
async fn live(
    api: &dyn Api,
    lease: &ShardLease,
    seen: &mut BTreeMap<String, (String, Instant)>,
    now: Instant,
) -> Result<Vec<u32>, kubesim_core::ApiError> {
    let opts = ListOptions {
        label_selector: Some(format!("{GROUP_LABEL}={}", lease.group)),
        ..Default::default()
    };
    let list = api.list(&leases(), &lease.namespace, &opts).await?;
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let mut members = Vec::new();
    let mut names = Vec::new();
    for item in &items {
        let name = meta::name(item).to_string();
        let rv = meta::resource_version(item).to_string();
        let at = match seen.get(&name) {
            Some((old, at)) if *old == rv => *at,
            _ => now,
        };
        seen.insert(name.clone(), (rv, at));
        names.push(name);
        let held = meta::path(item, "spec.holderIdentity")
            .and_then(Value::as_str)
            .is_some_and(|h| !h.is_empty());
        let shard = item["metadata"]["labels"][SHARD_LABEL]
            .as_str()
            .and_then(|s| s.parse::<u32>().ok());
        if let (true, Some(i), true) = (held, shard, now - at < lease.duration) {
            members.push(i);
        }
    }
    seen.retain(|n, _| names.contains(n));
    Ok(members)
}

/// Gives this shard's Lease up (at a clean exit), so that the others take
/// its nodes over at their next look rather than after the lease expires.
pub async fn release(api: &dyn Api, shards: &Shards, lease: &ShardLease) {
    let name = lease.name(shards.me());
    let Ok(mut current) = api.get(&leases(), &lease.namespace, &name).await else {
        return;
    };
    if meta::path(&current, "spec.holderIdentity").and_then(Value::as_str)
        != Some(lease.identity.as_str())
    {
        return;
    }
    current["spec"]["holderIdentity"] = Value::Null;
    if let Err(e) = api
        .update(
            &leases(),
            &lease.namespace,
            current,
            None,
            &WriteOptions::default(),
        )
        .await
    {
        tracing::warn!(error = %e.message, "cannot release the shard lease");
    }
}
