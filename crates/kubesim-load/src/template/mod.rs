//! Rendering of test configs, modules and object templates: Go templates
//! with ClusterLoader2's functions over a mapping of parameters.

mod mapping;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kubesim_gocompat::template::clusterloader2::{ClusterLoader2Funcs, Draws};
use kubesim_gocompat::template::Template;
use kubesim_runtime::Rng;
use parking_lot::Mutex;
use serde_json::Value;

pub use kubesim_gocompat::template::clusterloader2::yaml_quote;
pub use mapping::{build_mapping, parse_env_value, MappingError};

/// The run's random sequence, drawn from by ClusterLoader2's functions.
struct RunRng(Rng);

impl Draws for RunRng {
    fn below(&self, n: u64) -> u64 {
        self.0.below(n)
    }

    fn seeded(seed: u64) -> Self {
        RunRng(Rng::seeded(seed))
    }
}

/// Parses and renders template files, each parsed once.
pub struct Renderer {
    funcs: ClusterLoader2Funcs<RunRng>,
    cache: Mutex<BTreeMap<PathBuf, Arc<Template>>>,
}

impl Renderer {
    /// `base_dir`: where `IncludeFile` paths start.
    pub fn new(rng: Rng, base_dir: &Path) -> Self {
        Renderer {
            funcs: ClusterLoader2Funcs {
                rng: RunRng(rng),
                base_dir: base_dir.to_path_buf(),
            },
            cache: Mutex::new(BTreeMap::new()),
        }
    }

    /// The parsed template of `path`; errors name the file.
    pub fn load(&self, path: &Path) -> Result<Arc<Template>, String> {
        if let Some(t) = self.cache.lock().get(path) {
            return Ok(t.clone());
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        let t =
            Arc::new(Template::parse(&text).map_err(|e| format!("{}: {}", path.display(), e.0))?);
        self.cache.lock().insert(path.to_path_buf(), t.clone());
        Ok(t)
    }

    /// Renders `path` with `mapping` (a map of parameters) as `.`.
    pub fn render_file(&self, path: &Path, mapping: &Value) -> Result<String, String> {
        let t = self.load(path)?;
        self.render(&t, mapping)
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn render(&self, t: &Template, mapping: &Value) -> Result<String, String> {
        t.render(mapping, &self.funcs).map_err(|e| e.0)
    }

    pub fn render_str(&self, src: &str, mapping: &Value) -> Result<String, String> {
        let t = Template::parse(src).map_err(|e| e.0)?;
        self.render(&t, mapping)
    }
}

#[cfg(test)]
mod tests;
