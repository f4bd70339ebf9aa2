//! WaitForGenericK8sObjects: a barrier on the `status.conditions` of any
//! resource. Polls until at least `minDesiredObjectCount` objects carry a
//! successful or a failed condition (`"Type=Status"`), then fails if more
//! than `maxFailedObjectCount` of them failed.

use std::collections::BTreeSet;
use std::time::Duration;

use kubesim_core::meta;
use kubesim_runtime::{ListOptions, ResourceRef, ShapeCheck};
use serde_json::Value;

use crate::params::{self, Params};
use crate::report::Summary;

use super::{Ctx, Measurement, MeasurementError};

const METHOD: &str = "WaitForGenericK8sObjects";
const DEFAULT_REFRESH: Duration = Duration::from_secs(5);
/// Upstream's default when a config gives no timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// A zero refresh interval would poll without letting time pass.
const MIN_REFRESH: Duration = Duration::from_millis(1);

/// Which namespaces count.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Namespaces {
    All,
    /// `<prefix>-<min>` … `<prefix>-<max>`.
    Range {
        prefix: String,
        min: i64,
        max: i64,
    },
}

impl Namespaces {
    fn parse(p: &Params, default_prefix: &str) -> Result<Self, MeasurementError> {
        let Some(v) = p.get("namespaceRange").filter(|v| !v.is_null()) else {
            return Ok(Namespaces::All);
        };
        let r = v.as_object().ok_or_else(|| {
            MeasurementError::failed(format!(
                "{METHOD}: parameter \"namespaceRange\" must be a map, got {v}"
            ))
        })?;
        if params::bool_or(r, "allNamespaces", false)? {
            return Ok(Namespaces::All);
        }
        let need = |name: &str| {
            params::int(r, name)?.ok_or_else(|| {
                MeasurementError::failed(format!(
                    "{METHOD}: parameter \"namespaceRange.{name}\" is required"
                ))
            })
        };
        let (min, max) = (need("min")?, need("max")?);
        // Phases name the prefix `basename`; upstream's own key is
        // `prefix`; without either, the automanaged namespaces.
        let prefix = match params::string(r, "prefix")? {
            Some(p) => p,
            None => params::string(r, "basename")?.unwrap_or_else(|| default_prefix.to_string()),
        };
        Ok(Namespaces::Range { prefix, min, max })
    }

    fn matches(&self, set: &BTreeSet<String>, ns: &str) -> bool {
        match self {
            Namespaces::All => true,
            Namespaces::Range { .. } => set.contains(ns),
        }
    }

    fn names(&self) -> BTreeSet<String> {
        match self {
            Namespaces::All => BTreeSet::new(),
            Namespaces::Range { prefix, min, max } => {
                (*min..=*max).map(|i| format!("{prefix}-{i}")).collect()
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            Namespaces::All => "*".into(),
            Namespaces::Range { prefix, min, max } => format!("{prefix}-({min}-{max})"),
        }
    }
}

struct Options {
    resource: ResourceRef,
    namespaces: Namespaces,
    label_selector: Option<String>,
    successful: BTreeSet<String>,
    failed: BTreeSet<String>,
    min_desired: i64,
    max_failed: i64,
    refresh: Duration,
    timeout: Duration,
}

impl Options {
    fn parse(p: &Params, default_prefix: &str) -> Result<Self, MeasurementError> {
        let resource = ResourceRef::new(
            &params::string_or(p, "objectGroup", "")?,
            &params::required_string(p, "objectVersion")?,
            &params::required_string(p, "objectResource")?,
        );
        Ok(Options {
            resource,
            namespaces: Namespaces::parse(p, default_prefix)?,
            label_selector: params::string(p, "labelSelector")?.filter(|s| !s.is_empty()),
            successful: string_list(p, "successfulConditions")?,
            failed: string_list(p, "failedConditions")?,
            min_desired: params::int(p, "minDesiredObjectCount")?.ok_or_else(|| {
                MeasurementError::failed(format!(
                    "{METHOD}: parameter \"minDesiredObjectCount\" is required"
                ))
            })?,
            max_failed: params::int_or(p, "maxFailedObjectCount", 0)?,
            refresh: params::duration_or(p, "refreshInterval", DEFAULT_REFRESH)?.max(MIN_REFRESH),
            timeout: params::duration_or(p, "timeout", DEFAULT_TIMEOUT)?,
        })
    }

    /// Upstream's log prefix: the resource and the namespaces.
    fn describe(&self) -> String {
        let r = &self.resource;
        format!(
            "{METHOD}: objects: \"{}/{}, Resource={}\", namespaces: \"{}\"",
            r.group,
            r.version,
            r.plural,
            self.namespaces.describe()
        )
    }
}

fn string_list(p: &Params, name: &str) -> Result<BTreeSet<String>, MeasurementError> {
    match p.get(name) {
        None | Some(Value::Null) => Ok(BTreeSet::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    MeasurementError::failed(format!(
                        "{METHOD}: parameter {name:?}: expected strings, got {v}"
                    ))
                })
            })
            .collect(),
        Some(v) => Err(MeasurementError::failed(format!(
            "{METHOD}: parameter {name:?}: expected a list of strings, got {v}"
        ))),
    }
}

/// Objects with a successful and with a failed condition, and how many
/// objects there are.
#[derive(Debug, Default, PartialEq, Eq)]
struct Count {
    successful: Vec<String>,
    failed: Vec<String>,
    total: usize,
}

/// The first condition of an object naming a successful or a failed
/// state decides which it is (upstream assumes they exclude each other).
fn count(objects: &[&Value], successful: &BTreeSet<String>, failed: &BTreeSet<String>) -> Count {
    let mut c = Count {
        total: objects.len(),
        ..Default::default()
    };
    for o in objects {
        let conditions = o
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for cond in conditions {
            let key = format!(
                "{}={}",
                cond.get("type").and_then(Value::as_str).unwrap_or(""),
                cond.get("status").and_then(Value::as_str).unwrap_or("")
            );
            let name = || {
                let (ns, n) = (meta::namespace(o), meta::name(o));
                if ns.is_empty() {
                    n.to_string()
                } else {
                    format!("{ns}/{n}")
                }
            };
            if successful.contains(&key) {
                c.successful.push(name());
                break;
            }
            if failed.contains(&key) {
                c.failed.push(name());
                break;
            }
        }
    }
    c
}

pub struct WaitForGenericK8sObjects;

#[async_trait::async_trait]
impl Measurement for WaitForGenericK8sObjects {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        _identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        let o = Options::parse(p, &ctx.namespace_prefix)?;
        wait(ctx, &o).await.map(|()| Vec::new())
    }
}

async fn wait(ctx: &Ctx, o: &Options) -> Result<(), MeasurementError> {
    let deadline = ctx.clock.instant() + o.timeout;
    let in_range = o.namespaces.names();
    let opts = ListOptions {
        label_selector: o.label_selector.clone(),
        ..Default::default()
    };
    // Objects of the wrong shape are neither counted nor waited for.
    let check = ShapeCheck::new(&o.resource);
    loop {
        // One list of every namespace, filtered here: cheaper than a list
        // per namespace of a large range.
        let list = ctx.cluster.api().list(&o.resource, "", &opts).await?;
        let items = list
            .get("items")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let objects: Vec<&Value> = items
            .iter()
            .filter(|x| o.namespaces.matches(&in_range, meta::namespace(x)) && check.admits(x))
            .collect();
        let c = count(&objects, &o.successful, &o.failed);
        let (ok, bad) = (c.successful.len() as i64, c.failed.len() as i64);
        if o.successful.is_empty() && o.failed.is_empty() {
            if o.min_desired <= c.total as i64 {
                return Ok(());
            }
        } else if o.min_desired <= ok + bad {
            if o.max_failed < bad {
                return Err(MeasurementError::failed(format!(
                    "{}: too many failed objects, expected at most {} - currently there are: \
                     successful={ok} failed={bad} count={} failed-objects=[{}]",
                    o.describe(),
                    o.max_failed,
                    c.total,
                    c.failed.join(",")
                )));
            }
            return Ok(());
        }
        let next = ctx.clock.instant() + o.refresh;
        if next > deadline {
            ctx.clock.sleep_until(deadline).await;
            return Err(MeasurementError::failed(format!(
                "{}: timeout while waiting for {} objects to be successful or failed - \
                 currently there are: successful={ok} failed={bad} count={}",
                o.describe(),
                o.min_desired,
                c.total
            )));
        }
        ctx.clock.sleep_until(next).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::test_support::*;
    use serde_json::json;

    fn params(v: Value) -> Params {
        v.as_object().cloned().unwrap_or_default()
    }

    fn pvcs() -> ResourceRef {
        ResourceRef::core("persistentvolumeclaims")
    }

    async fn namespace(api: &std::sync::Arc<dyn kubesim_runtime::Api>, name: &str) {
        create(
            api,
            &ResourceRef::core("namespaces"),
            "",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        )
        .await;
    }

    async fn claim(api: &std::sync::Arc<dyn kubesim_runtime::Api>, ns: &str, name: &str) {
        create(
            api,
            &pvcs(),
            ns,
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name},
                "spec": {"accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}}}}),
        )
        .await;
    }

    async fn condition(
        api: &std::sync::Arc<dyn kubesim_runtime::Api>,
        ns: &str,
        name: &str,
        ty: &str,
        status: &str,
    ) {
        patch_status_of(
            api,
            &pvcs(),
            ns,
            name,
            json!({"conditions": [{"type": ty, "status": status}]}),
        )
        .await;
    }

    fn base(extra: Value) -> Params {
        let mut p = params(json!({"objectGroup": "", "objectVersion": "v1",
            "objectResource": "persistentvolumeclaims",
            "namespaceRange": {"min": 1, "max": 2, "basename": "t"},
            "successfulConditions": ["Resizing=True"],
            "failedConditions": ["Resizing=False"],
            "refreshInterval": "5s", "timeout": "60s"}));
        if let Some(e) = extra.as_object() {
            p.extend(e.clone());
        }
        p
    }

    #[tokio::test(start_paused = true)]
    async fn waits_for_enough_objects_with_conditions() {
        let (ctx, api) = ctx().await;
        for ns in ["t-1", "t-2", "t-3"] {
            namespace(&api, ns).await;
            claim(&api, ns, "c").await;
        }
        // Outside the range: does not count.
        condition(&api, "t-3", "c", "Resizing", "True").await;
        condition(&api, "t-1", "c", "Resizing", "True").await;
        let (clock, api2) = (ctx.clock.clone(), api.clone());
        tokio::spawn(async move {
            clock.sleep(Duration::from_secs(12)).await;
            condition(&api2, "t-2", "c", "Resizing", "True").await;
        });
        let t0 = ctx.clock.instant();
        let p = base(json!({"minDesiredObjectCount": 2}));
        WaitForGenericK8sObjects
            .execute(&ctx, "g", &p)
            .await
            .expect("both succeed");
        // Checked at 0, 5, 10, 15 s.
        assert_eq!(ctx.clock.instant() - t0, Duration::from_secs(15));
    }

    #[tokio::test(start_paused = true)]
    async fn too_many_failed_and_timeout() {
        let (ctx, api) = ctx().await;
        for ns in ["t-1", "t-2"] {
            namespace(&api, ns).await;
            claim(&api, ns, "c").await;
        }
        condition(&api, "t-1", "c", "Resizing", "True").await;
        condition(&api, "t-2", "c", "Resizing", "False").await;
        let p = base(json!({"minDesiredObjectCount": 2}));
        let err = WaitForGenericK8sObjects
            .execute(&ctx, "g", &p)
            .await
            .unwrap_err();
        assert!(err
            .message
            .contains("too many failed objects, expected at most 0"));
        assert!(
            err.message.contains("failed-objects=[t-2/c]"),
            "{}",
            err.message
        );
        let p = base(json!({"minDesiredObjectCount": 2, "maxFailedObjectCount": 1}));
        WaitForGenericK8sObjects
            .execute(&ctx, "g", &p)
            .await
            .expect("one failure allowed");

        let t0 = ctx.clock.instant();
        let p = base(json!({"minDesiredObjectCount": 3, "timeout": "12s"}));
        let err = WaitForGenericK8sObjects
            .execute(&ctx, "g", &p)
            .await
            .unwrap_err();
        assert_eq!(ctx.clock.instant() - t0, Duration::from_secs(12));
        assert_eq!(
            err.message,
            "WaitForGenericK8sObjects: objects: \"/v1, Resource=persistentvolumeclaims\", \
             namespaces: \"t-(1-2)\": timeout while waiting for 3 objects to be successful or \
             failed - currently there are: successful=1 failed=1 count=2"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn without_conditions_counts_objects_in_every_namespace() {
        let (ctx, api) = ctx().await;
        namespace(&api, "x").await;
        claim(&api, "x", "a").await;
        claim(&api, "default", "b").await;
        let p = params(
            json!({"objectVersion": "v1", "objectResource": "persistentvolumeclaims",
            "minDesiredObjectCount": 2, "timeout": "10s"}),
        );
        WaitForGenericK8sObjects
            .execute(&ctx, "g", &p)
            .await
            .expect("two objects");
    }

    #[test]
    fn parameters() {
        let err = Options::parse(&params(json!({"objectVersion": "v1"})), "t").err();
        assert!(err.is_some_and(|e| e.message.contains("objectResource")));
        let p = base(json!({}));
        assert!(Options::parse(&p, "t")
            .err()
            .is_some_and(|e| e.message.contains("minDesiredObjectCount")));
        let p = base(json!({"minDesiredObjectCount": 1,
            "namespaceRange": {"min": 1, "max": 3, "prefix": "p"}}));
        let o = Options::parse(&p, "t").expect("options");
        assert_eq!(o.namespaces.names().len(), 3);
        assert_eq!(o.refresh, Duration::from_secs(5));
        // Without a prefix, the automanaged namespaces.
        let p = base(json!({"minDesiredObjectCount": 1, "namespaceRange": {"min": 1, "max": 2}}));
        let o = Options::parse(&p, "test-abc").expect("options");
        let names: Vec<String> = o.namespaces.names().into_iter().collect();
        assert_eq!(names, ["test-abc-1", "test-abc-2"]);
        let p = base(json!({"minDesiredObjectCount": 1, "successfulConditions": "Ready=True"}));
        assert!(Options::parse(&p, "t").is_err());
    }
}
