//! The checks made before a test touches the cluster: ClusterLoader2's
//! own validation (`api/validation.go`), plus what it only finds at run
//! time (template files that do not render, measurement methods kubesim
//! lacks) and one mistake it never reports: a phase that changes both the
//! replica count and the template of objects that stay, which would leave
//! old replicas on the old template and new ones on the new.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::decode::ConfigError;
use super::lines::{show, LineIndex, Seg};
use super::schema::*;
use super::CompileOptions;
use crate::objects;
use crate::template::Renderer;

/// The rendered text of the config and each module, to find lines in.
#[derive(Default)]
pub struct Sources {
    files: BTreeMap<String, LineIndex>,
}

impl Sources {
    pub fn add(&mut self, file: &str, text: &str) {
        self.files.insert(file.to_string(), LineIndex::new(text));
    }

    fn err(&self, file: &str, path: &[Seg], message: impl std::fmt::Display) -> ConfigError {
        let at = show(path);
        ConfigError {
            file: file.to_string(),
            line: self.files.get(file).and_then(|l| l.line_of(path)),
            message: if at.is_empty() {
                message.to_string()
            } else {
                format!("{at}: {message}")
            },
        }
    }
}

fn with(path: &[Seg], key: &str) -> Vec<Seg> {
    let mut p = path.to_vec();
    p.push(Seg::Key(key.into()));
    p
}

pub fn config(
    c: &Config,
    src: &Sources,
    file: &str,
    dir: &Path,
    renderer: &Renderer,
    opts: &CompileOptions,
) -> Result<(), ConfigError> {
    let top = |key: &str, m: String| src.err(file, &[Seg::Key(key.into())], m);
    if c.steps.is_empty() {
        return Err(top("steps", "a test needs at least one step".into()));
    }
    if c.namespace.number <= 0 {
        return Err(top(
            "namespace",
            format!("namespace.number must be > 0, is {}", c.namespace.number),
        ));
    }
    if c.chaos_monkey
        .as_ref()
        .is_some_and(|v| v.as_object().is_some_and(|o| !o.is_empty()))
    {
        return Err(top(
            "chaosMonkey",
            "chaosMonkey (node failures through a provider) is not supported; \
             use Apate NodeConfigurations or kwok chaos Stages to fail emulated nodes"
                .into(),
        ));
    }
    if !c.dependencies.is_empty() {
        return Err(top(
            "dependencies",
            "dependencies (e.g. DRATestDriver) are not supported".into(),
        ));
    }
    let mut sets = BTreeMap::new();
    for t in &c.tuning_sets {
        if sets.insert(t.name.as_str(), t).is_some() {
            return Err(src.err(
                file,
                &t.path,
                format!("tuning set {:?} is declared twice", t.name),
            ));
        }
        tuning_set(t).map_err(|m| src.err(file, &t.path, m))?;
    }
    let mut templates = TemplateHistory::default();
    for s in &c.steps {
        step(s, src, &sets, dir, renderer, opts, &mut templates)?;
    }
    Ok(())
}

fn tuning_set(t: &TuningSet) -> Result<(), String> {
    let positive = |what: &str, v: f64| {
        if v > 0.0 {
            Ok(())
        } else {
            Err(format!(
                "tuning set {:?}: {what} must be > 0, is {v}",
                t.name
            ))
        }
    };
    match &t.load {
        Load::Qps { qps } => positive("qps", *qps),
        Load::Randomized { average_qps } => positive("averageQps", *average_qps),
        Load::Stepped { burst_size, .. } => positive("burstSize", *burst_size as f64),
        Load::TimeLimited { time_limit } | Load::RandomizedTimeLimited { time_limit } => {
            positive("timeLimit", time_limit.as_secs_f64())
        }
        Load::ParallelismLimited { parallelism_limit } => {
            positive("parallelismLimit", *parallelism_limit as f64)
        }
        Load::GlobalQps { qps, burst } => {
            positive("qps", *qps)?;
            positive("burst", *burst as f64)
        }
        Load::Poisson {
            expected_actions_per_second,
        } => positive("expectedActionsPerSecond", *expected_actions_per_second),
    }
}

fn step(
    s: &Step,
    src: &Sources,
    sets: &BTreeMap<&str, &TuningSet>,
    dir: &Path,
    renderer: &Renderer,
    opts: &CompileOptions,
    templates: &mut TemplateHistory,
) -> Result<(), ConfigError> {
    let here = |path: &[Seg], m: String| src.err(&s.file, path, m);
    match (s.phases.is_empty(), s.measurements.is_empty()) {
        (true, true) => {
            return Err(here(
                &s.path,
                "a step needs phases or measurements (or a module)".into(),
            ))
        }
        (false, false) => {
            return Err(here(
                &s.path,
                "a step can have phases or measurements, not both".into(),
            ))
        }
        _ => {}
    }
    for m in &s.measurements {
        if m.method.is_empty() {
            return Err(here(&m.path, "Method is required".into()));
        }
        if !crate::measurement::is_implemented(&m.method) {
            return Err(here(
                &with(&m.path, "Method"),
                format!(
                    "measurement method {:?} is not implemented by kubesim (implemented: {})",
                    m.method,
                    crate::measurement::implemented().join(", ")
                ),
            ));
        }
        if m.identifier.is_empty() == m.instances.is_empty() {
            return Err(here(
                &m.path,
                "a measurement needs exactly one of Identifier and Instances".into(),
            ));
        }
    }
    for p in &s.phases {
        phase(p, s, src, sets, dir, renderer, opts, templates)?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn phase(
    p: &Phase,
    s: &Step,
    src: &Sources,
    sets: &BTreeMap<&str, &TuningSet>,
    dir: &Path,
    renderer: &Renderer,
    opts: &CompileOptions,
    templates: &mut TemplateHistory,
) -> Result<(), ConfigError> {
    let here = |path: &[Seg], m: String| src.err(&s.file, path, m);
    if p.namespace_range.is_some() && !p.namespace_list.is_empty() {
        return Err(here(
            &p.path,
            "a phase can have namespaceRange or namespaceList, not both".into(),
        ));
    }
    if let Some(r) = &p.namespace_range {
        if r.min < 0 || r.max < r.min {
            return Err(here(
                &with(&p.path, "namespaceRange"),
                format!("needs 0 <= min <= max, has min {} max {}", r.min, r.max),
            ));
        }
    }
    if p.replicas_per_namespace < 0 {
        return Err(here(
            &with(&p.path, "replicasPerNamespace"),
            "must be >= 0".into(),
        ));
    }
    if p.tuning_set.is_empty() {
        return Err(here(&p.path, "tuningSet is required".into()));
    }
    if !sets.contains_key(p.tuning_set.as_str()) {
        return Err(here(
            &with(&p.path, "tuningSet"),
            format!("tuning set {:?} is not declared", p.tuning_set),
        ));
    }
    let first_ns = first_namespace(p, opts.namespace_prefix);
    for o in &p.object_bundle {
        let errs = kubesim_core::validation::names::dns1123_subdomain(&o.basename);
        if !errs.is_empty() {
            return Err(here(
                &with(&o.path, "basename"),
                format!(
                    "{:?} is not a DNS-1123 subdomain: {}",
                    o.basename,
                    errs.join("; ")
                ),
            ));
        }
        // As Go's path.Join, a leading slash does not make the path absolute.
        let tpl = dir.join(o.object_template_path.trim_start_matches('/'));
        if o.object_template_path.is_empty() || !tpl.is_file() {
            return Err(here(
                &with(&o.path, "objectTemplatePath"),
                format!("template file {} does not exist", tpl.display()),
            ));
        }
        objects::template_kinds(&tpl).map_err(|m| here(&with(&o.path, "objectTemplatePath"), m))?;
        // Rendering the first replica now finds template errors before
        // any object exists.
        if p.replicas_per_namespace > 0 {
            let mapping = object_mapping(opts.mapping, o, 0, &first_ns);
            objects::render_objects(renderer, &tpl, mapping)
                .map_err(|m| here(&with(&o.path, "objectTemplatePath"), m))?;
        }
        templates.check(p, o).map_err(|m| here(&o.path, m))?;
    }
    Ok(())
}

fn first_namespace(p: &Phase, prefix: &str) -> String {
    if let Some(n) = p.namespace_list.first() {
        return n.clone();
    }
    match &p.namespace_range {
        Some(r) => format!("{}-{}", r.basename.as_deref().unwrap_or(prefix), r.min),
        None => String::new(),
    }
}

/// The mapping an object template renders with: the test's, the fill map,
/// and the object's identity.
pub fn object_mapping(
    global: &Map<String, Value>,
    o: &ObjectSpec,
    index: i64,
    namespace: &str,
) -> Map<String, Value> {
    let mut m = global.clone();
    m.extend(o.template_fill_map.clone());
    let name = format!("{}-{}", o.basename, index);
    m.insert("Name".into(), Value::String(name));
    m.insert("Index".into(), Value::from(index));
    m.insert("Namespace".into(), Value::String(namespace.to_string()));
    m.insert("BaseName".into(), Value::String(o.basename.clone()));
    m
}

/// The last replica count and template of each object set, by namespace
/// selection and basename.
#[derive(Default)]
struct TemplateHistory {
    last: BTreeMap<(String, String), Used>,
}

/// Replicas, template path and fill map an object set was last given.
type Used = (i64, String, Map<String, Value>);

impl TemplateHistory {
    fn check(&mut self, p: &Phase, o: &ObjectSpec) -> Result<(), String> {
        let scope = match (&p.namespace_range, p.namespace_list.is_empty()) {
            (Some(r), _) => format!("{:?}:{}-{}", r.basename, r.min, r.max),
            (None, false) => p.namespace_list.join(","),
            (None, true) => String::new(),
        };
        let key = (scope, o.basename.clone());
        let now = (
            p.replicas_per_namespace,
            o.object_template_path.clone(),
            o.template_fill_map.clone(),
        );
        if let Some((replicas, path, fill)) = self.last.get(&key) {
            let template_changed = *path != now.1 || *fill != now.2;
            if *replicas > 0 && now.0 > 0 && *replicas != now.0 && template_changed {
                return Err(format!(
                    "this phase changes both the replicas ({replicas} to {}) and the template of {:?}; \
                     change them in two phases",
                    now.0, o.basename
                ));
            }
        }
        self.last.insert(key, now);
        Ok(())
    }
}
