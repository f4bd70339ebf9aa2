//! What `up`, `emulate` and `simulate` read alike for their emulated
//! nodes: the node template and the Stage files.

use std::path::{Path, PathBuf};

use anyhow::Context;
use kubesim_emulator::nodes::NodeTemplate;
use serde_json::Value;

/// The emulated node pool and the Stages that move nodes and pods along.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct NodePoolArgs {
    /// Emulated nodes to create (those that exist are kept, across
    /// restarts and between `kubesim emulate` shards).
    #[arg(long, default_value_t = 0)]
    pub nodes: u64,
    /// A Node manifest the `--nodes` are stamped from: capacity, labels,
    /// taints; `metadata.name` is the name prefix, `spec.podCIDR` the
    /// network per-node pod CIDRs are cut from, annotation
    /// `kubesim.io/zones: a,b,c` spreads them over zones.
    #[arg(long, value_name = "FILE")]
    pub node_template: Option<PathBuf>,
    /// kwok Stage objects (multi-document YAML; repeatable) that drive the
    /// lifecycles of emulated nodes and pods, instead of the built-in set.
    /// Stages can also be added and edited through the API at run time.
    #[arg(long, value_name = "FILE")]
    pub stages: Vec<PathBuf>,
}

impl NodePoolArgs {
    /// The node template and the Stages (None: the built-in set).
    pub fn read(&self) -> anyhow::Result<(NodeTemplate, Option<Vec<Value>>)> {
        Ok((
            read_template(self.node_template.as_deref())?,
            read_stages(&self.stages)?,
        ))
    }
}

/// `--node-template`, or the built-in template.
fn read_template(path: Option<&Path>) -> anyhow::Result<NodeTemplate> {
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
