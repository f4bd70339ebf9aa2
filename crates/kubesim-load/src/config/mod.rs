//! Compiling a test config: render it as a template, decode it, flatten
//! its modules and validate everything that can be checked before any
//! object is created, each error naming its file and line.

pub mod decode;
pub mod lines;
pub mod schema;
mod validate;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::template::Renderer;
pub use decode::{ConfigError, Validation};
pub use schema::*;
pub use validate::object_mapping;

/// Module nesting deeper than this is taken for a cycle.
const MAX_MODULE_DEPTH: usize = 16;

/// A config ready to run.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub config: Config,
    /// The rendered config file, as `generatedConfig_<name>.yaml`.
    pub rendered: String,
    /// The directory template and module paths are relative to.
    pub dir: PathBuf,
    /// Unknown keys under `Validation::Warn`.
    pub warnings: Vec<String>,
}

/// What the checks of object templates need to know.
pub struct CompileOptions<'a> {
    pub validation: Validation,
    pub mapping: &'a Map<String, Value>,
    /// The automanaged namespaces' prefix this run will use.
    pub namespace_prefix: &'a str,
}

pub fn compile(
    path: &Path,
    renderer: &Renderer,
    opts: &CompileOptions,
) -> Result<Compiled, ConfigError> {
    let file = path.display().to_string();
    let dir = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let rendered = renderer
        .render_file(path, &Value::Object(opts.mapping.clone()))
        .map_err(|message| template_error(&file, &message))?;
    let mut warnings = Vec::new();
    let mut sources = validate::Sources::default();
    sources.add(&file, &rendered);
    let mut config = {
        let value = parse_yaml(&file, &rendered)?;
        let doc = decode::Doc::new(&file, &rendered, opts.validation);
        let c = schema::config(doc.root(&value)?)?;
        warnings.extend(doc.warnings.into_inner());
        c
    };
    for s in &mut config.steps {
        s.file = file.clone();
    }
    config.steps = flatten(
        std::mem::take(&mut config.steps),
        &dir,
        renderer,
        opts,
        0,
        &mut warnings,
        &mut sources,
    )?;
    validate::config(&config, &sources, &file, &dir, renderer, opts)?;
    Ok(Compiled {
        config,
        rendered,
        dir,
        warnings,
    })
}

/// A template error of `file`, its `line N: ` moved into the location.
fn template_error(file: &str, message: &str) -> ConfigError {
    let m = message
        .strip_prefix(file)
        .and_then(|m| m.strip_prefix(": "))
        .unwrap_or(message);
    let at = m.strip_prefix("line ").and_then(|rest| {
        let (n, tail) = rest.split_once(": ")?;
        Some((n.parse::<usize>().ok()?, tail))
    });
    ConfigError {
        file: file.to_string(),
        line: at.map(|(n, _)| n),
        message: at.map_or(m, |(_, tail)| tail).to_string(),
    }
}

/// Parses rendered YAML; a syntax error names its line.
pub fn parse_yaml(file: &str, text: &str) -> Result<Value, ConfigError> {
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_saphyr::from_str::<Value>(text).map_err(|e| ConfigError {
        file: file.to_string(),
        line: e.location().map(|l| l.line() as usize),
        message: format!("not valid YAML: {}", first_line(&e.to_string())),
    })
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// Replaces module steps with the module's own steps, recursively; a
/// module is rendered with the test's mapping plus its `params`.
fn flatten(
    steps: Vec<Step>,
    dir: &Path,
    renderer: &Renderer,
    opts: &CompileOptions,
    depth: usize,
    warnings: &mut Vec<String>,
    sources: &mut validate::Sources,
) -> Result<Vec<Step>, ConfigError> {
    let mut out = Vec::new();
    for step in steps {
        let Some(module) = &step.module else {
            out.push(step);
            continue;
        };
        let here = |message: String| ConfigError {
            file: step.file.clone(),
            line: None,
            message,
        };
        if !step.phases.is_empty() || !step.measurements.is_empty() {
            return Err(here(format!(
                "{}: a step with a module can have neither phases nor measurements",
                lines::show(&step.path)
            )));
        }
        if depth >= MAX_MODULE_DEPTH {
            return Err(here(format!(
                "module {:?}: modules nest deeper than {MAX_MODULE_DEPTH} (a cycle?)",
                module.path
            )));
        }
        // A leading `/` is still relative to the config's directory.
        let path = dir.join(module.path.trim_start_matches('/'));
        let file = path.display().to_string();
        let mut mapping = opts.mapping.clone();
        mapping.extend(module.params.clone());
        let rendered = renderer
            .render_file(&path, &Value::Object(mapping.clone()))
            .map_err(|m| template_error(&file, &m))?;
        let value = parse_yaml(&file, &rendered)?;
        sources.add(&file, &rendered);
        let doc = decode::Doc::new(&file, &rendered, opts.validation);
        let mut inner = schema::module(doc.root(&value)?)?;
        warnings.extend(doc.warnings.into_inner());
        for s in &mut inner {
            s.file = file.clone();
        }
        let sub_opts = CompileOptions {
            validation: opts.validation,
            mapping: &mapping,
            namespace_prefix: opts.namespace_prefix,
        };
        out.extend(flatten(
            inner,
            dir,
            renderer,
            &sub_opts,
            depth + 1,
            warnings,
            sources,
        )?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
