//! What `up`, `emulate` and `simulate` read alike for their emulated
//! nodes: the node template and the Stage files.

use std::path::{Path, PathBuf};

use anyhow::Context;
use kubesim_emulator::nodes::NodeTemplate;
use serde_json::Value;

/// `--node-template`, or the built-in template.
pub fn read_template(path: Option<&Path>) -> anyhow::Result<NodeTemplate> {
    match path {
        Some(p) => {
            NodeTemplate::from_file(p).map_err(|e| anyhow::anyhow!("bad --node-template: {e}"))
        }
        None => Ok(NodeTemplate::default()),
    }
}

/// The Stage objects of every `--stages` file, or None for the built-in
/// set.
pub fn read_stages(paths: &[PathBuf]) -> anyhow::Result<Option<Vec<Value>>> {
    if paths.is_empty() {
        return Ok(None);
    }
    let mut all = Vec::new();
    for p in paths {
        let text =
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
        all.extend(
            kubesim_emulator::stage::stage_objects_from_yaml(&text)
                .map_err(|e| anyhow::anyhow!("bad --stages {}: {e}", p.display()))?,
        );
    }
    Ok(Some(all))
}
