//! The test config's types (ClusterLoader2's `api/types.go`) and their
//! decoding with its defaults.

use std::time::Duration;

use serde_json::{Map, Value};

use super::decode::{Obj, Result};
use super::lines::Seg;

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub name: String,
    pub namespace: NamespaceConfig,
    pub tuning_sets: Vec<TuningSet>,
    pub steps: Vec<Step>,
    /// Kept to refuse it clearly: node failures need a provider.
    pub chaos_monkey: Option<Value>,
    pub dependencies: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NamespaceConfig {
    pub number: i64,
    /// None: `test-<6 random [a-z0-9]>`, drawn at run time.
    pub prefix: Option<String>,
    pub delete_stale_namespaces: bool,
    pub delete_automanaged_namespaces: bool,
    pub enable_existing_namespaces: bool,
    pub delete_namespace_timeout: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TuningSet {
    pub name: String,
    pub load: Load,
    pub path: Vec<Seg>,
}

/// The pacing of a tuning set (exactly one kind per set).
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    Qps {
        qps: f64,
    },
    Randomized {
        average_qps: f64,
    },
    Stepped {
        burst_size: i64,
        step_delay: Duration,
    },
    TimeLimited {
        time_limit: Duration,
    },
    RandomizedTimeLimited {
        time_limit: Duration,
    },
    ParallelismLimited {
        parallelism_limit: i64,
    },
    GlobalQps {
        qps: f64,
        burst: i64,
    },
    Poisson {
        expected_actions_per_second: f64,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub name: String,
    pub phases: Vec<Phase>,
    pub measurements: Vec<MeasurementSpec>,
    pub module: Option<ModuleRef>,
    pub path: Vec<Seg>,
    /// The file the step was read from (a module's, for flattened steps).
    pub file: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModuleRef {
    pub path: String,
    pub params: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub namespace_range: Option<NamespaceRange>,
    pub namespace_list: Vec<String>,
    pub replicas_per_namespace: i64,
    pub tuning_set: String,
    pub object_bundle: Vec<ObjectSpec>,
    pub path: Vec<Seg>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NamespaceRange {
    pub min: i64,
    pub max: i64,
    pub basename: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ObjectSpec {
    pub basename: String,
    pub object_template_path: String,
    pub template_fill_map: Map<String, Value>,
    /// `listUnknownObjectOptions.labelSelector`: existing objects to count
    /// as replicas on first sight.
    pub list_unknown_selector: Option<Value>,
    pub path: Vec<Seg>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MeasurementSpec {
    pub method: String,
    pub identifier: String,
    pub params: Map<String, Value>,
    /// `Instances`: one call per instance, its params over the shared ones.
    pub instances: Vec<(String, Map<String, Value>)>,
    pub path: Vec<Seg>,
}

const DEFAULT_NAMESPACE_DELETE_TIMEOUT: Duration = Duration::from_secs(600);

pub fn config(mut o: Obj) -> Result<Config> {
    let name = o.string("name")?.unwrap_or_default();
    let automanaged = o.int("automanagedNamespaces")?;
    let mut namespace = match o.obj("namespace")? {
        Some(n) => namespace_config(n)?,
        None => namespace_config_default(),
    };
    // The deprecated top-level count still applies when `number` was left
    // at its default, as upstream copies it.
    if let Some(n) = automanaged {
        if namespace.number == 1 {
            namespace.number = n;
        }
    }
    let tuning_sets = o
        .objs("tuningSets")?
        .into_iter()
        .map(tuning_set)
        .collect::<Result<_>>()?;
    let steps = o
        .objs("steps")?
        .into_iter()
        .map(step)
        .collect::<Result<_>>()?;
    let chaos_monkey = o.get("chaosMonkey").map(|(v, _)| v.clone());
    let dependencies = o
        .list("dependencies")?
        .into_iter()
        .map(|(v, _)| v.clone())
        .collect();
    o.finish()?;
    Ok(Config {
        name,
        namespace,
        tuning_sets,
        steps,
        chaos_monkey,
        dependencies,
    })
}

fn namespace_config_default() -> NamespaceConfig {
    NamespaceConfig {
        number: 1,
        prefix: None,
        delete_stale_namespaces: false,
        delete_automanaged_namespaces: true,
        enable_existing_namespaces: false,
        delete_namespace_timeout: DEFAULT_NAMESPACE_DELETE_TIMEOUT,
    }
}

fn namespace_config(mut o: Obj) -> Result<NamespaceConfig> {
    let d = namespace_config_default();
    let n = NamespaceConfig {
        number: o.int("number")?.unwrap_or(d.number),
        prefix: o.string("prefix")?.filter(|p| !p.is_empty()),
        delete_stale_namespaces: o.bool("deleteStaleNamespaces")?.unwrap_or(false),
        delete_automanaged_namespaces: o.bool("deleteAutomanagedNamespaces")?.unwrap_or(true),
        enable_existing_namespaces: o.bool("enableExistingNamespaces")?.unwrap_or(false),
        delete_namespace_timeout: o
            .duration("deleteNamespaceTimeout")?
            .unwrap_or(d.delete_namespace_timeout),
    };
    o.finish()?;
    Ok(n)
}

fn tuning_set(mut o: Obj) -> Result<TuningSet> {
    let path = o.path.clone();
    let name = o.string("name")?.unwrap_or_default();
    let _ = o.duration("initialDelay")?; // declared upstream, never used
    let mut loads = Vec::new();
    if let Some(mut t) = o.obj("qpsLoad")? {
        loads.push(Load::Qps {
            qps: t.float("qps")?.unwrap_or(0.0),
        });
        t.finish()?;
    }
    if let Some(mut t) = o.obj("randomizedLoad")? {
        loads.push(Load::Randomized {
            average_qps: t.float("averageQps")?.unwrap_or(0.0),
        });
        t.finish()?;
    }
    if let Some(mut t) = o.obj("steppedLoad")? {
        loads.push(Load::Stepped {
            burst_size: t.int("burstSize")?.unwrap_or(0),
            step_delay: t.duration("stepDelay")?.unwrap_or_default(),
        });
        t.finish()?;
    }
    if let Some(mut t) = o.obj("timeLimitedLoad")? {
        loads.push(Load::TimeLimited {
            time_limit: t.duration("timeLimit")?.unwrap_or_default(),
        });
        t.finish()?;
    }
    if let Some(mut t) = o.obj("randomizedTimeLimitedLoad")? {
        loads.push(Load::RandomizedTimeLimited {
            time_limit: t.duration("timeLimit")?.unwrap_or_default(),
        });
        t.finish()?;
    }
    if let Some(mut t) = o.obj("parallelismLimitedLoad")? {
        loads.push(Load::ParallelismLimited {
            parallelism_limit: t.int("parallelismLimit")?.unwrap_or(0),
        });
        t.finish()?;
    }
    if let Some(mut t) = o.obj("globalQPSLoad")? {
        loads.push(Load::GlobalQps {
            qps: t.float("qps")?.unwrap_or(0.0),
            burst: t.int("burst")?.unwrap_or(0),
        });
        t.finish()?;
    }
    if let Some(mut t) = o.obj("poissonLoad")? {
        loads.push(Load::Poisson {
            expected_actions_per_second: t.float("expectedActionsPerSecond")?.unwrap_or(0.0),
        });
        t.finish()?;
    }
    if loads.len() != 1 {
        return Err(o.error(format!(
            "tuning set {name:?} must specify exactly 1 tuning set type, has {}",
            loads.len()
        )));
    }
    o.finish()?;
    Ok(TuningSet {
        name,
        load: loads.remove(0),
        path,
    })
}

fn step(mut o: Obj) -> Result<Step> {
    let path = o.path.clone();
    let name = o.string("name")?.unwrap_or_default();
    let phases = o
        .objs("phases")?
        .into_iter()
        .map(phase)
        .collect::<Result<_>>()?;
    let measurements = o
        .objs("measurements")?
        .into_iter()
        .map(measurement)
        .collect::<Result<_>>()?;
    let module = match o.obj("module")? {
        Some(mut m) => {
            let r = ModuleRef {
                path: m.string("path")?.unwrap_or_default(),
                params: m.map("params")?,
            };
            m.finish()?;
            Some(r)
        }
        None => None,
    };
    o.finish()?;
    Ok(Step {
        name,
        phases,
        measurements,
        module,
        path,
        file: String::new(),
    })
}

fn phase(mut o: Obj) -> Result<Phase> {
    let path = o.path.clone();
    let namespace_range = match o.obj("namespaceRange")? {
        Some(mut r) => {
            let nr = NamespaceRange {
                min: r.int("min")?.unwrap_or(0),
                max: r.int("max")?.unwrap_or(0),
                basename: r.string("basename")?,
            };
            r.finish()?;
            Some(nr)
        }
        None => None,
    };
    let p = Phase {
        namespace_range,
        namespace_list: o.strings("namespaceList")?,
        replicas_per_namespace: o.int("replicasPerNamespace")?.unwrap_or(0),
        tuning_set: o.string("tuningSet")?.unwrap_or_default(),
        object_bundle: o
            .objs("objectBundle")?
            .into_iter()
            .map(object)
            .collect::<Result<_>>()?,
        path,
    };
    o.finish()?;
    Ok(p)
}

fn object(mut o: Obj) -> Result<ObjectSpec> {
    let path = o.path.clone();
    let list_unknown_selector = match o.obj("listUnknownObjectOptions")? {
        Some(mut l) => {
            let s = l.get("labelSelector").map(|(v, _)| v.clone());
            l.finish()?;
            s
        }
        None => None,
    };
    let spec = ObjectSpec {
        basename: o.string("basename")?.unwrap_or_default(),
        object_template_path: o.string("objectTemplatePath")?.unwrap_or_default(),
        template_fill_map: o.map("templateFillMap")?,
        list_unknown_selector,
        path,
    };
    o.finish()?;
    Ok(spec)
}

fn measurement(mut o: Obj) -> Result<MeasurementSpec> {
    let path = o.path.clone();
    let method = o.string("Method")?.unwrap_or_default();
    let identifier = o.string("Identifier")?.unwrap_or_default();
    let params = o.map("Params")?;
    let mut instances = Vec::new();
    for mut i in o.objs("Instances")? {
        instances.push((
            i.string("Identifier")?.unwrap_or_default(),
            i.map("Params")?,
        ));
        i.finish()?;
    }
    o.finish()?;
    Ok(MeasurementSpec {
        method,
        identifier,
        params,
        instances,
        path,
    })
}

/// A module file: a list of steps.
pub fn module(mut o: Obj) -> Result<Vec<Step>> {
    let steps = o
        .objs("steps")?
        .into_iter()
        .map(step)
        .collect::<Result<_>>()?;
    o.finish()?;
    Ok(steps)
}
