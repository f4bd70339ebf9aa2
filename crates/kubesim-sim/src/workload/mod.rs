//! Reading workloads into jobs: Batsim JSON, SWF traces (optionally
//! gzipped) and Kubernetes manifests with arrival times.

pub mod batsim;
pub mod manifests;
pub mod swf;
pub mod synth;
pub mod work;

use std::io::Read;
use std::path::Path;

use kubesim_core::quantity::Quantity;
use serde_json::Value;

use crate::engine::SimJob;
pub use swf::{Skipped, SwfOptions};

/// How jobs become pods where the workload does not say.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadOptions {
    /// Cpu per requested resource (Batsim `res`, SWF processor).
    pub cpu_per_resource_millis: u64,
    /// Memory per job when the workload gives none (0: no request).
    pub memory_per_job_bytes: u64,
    pub swf: SwfOptions,
    /// The speed, in flops per second, that every compute host of the
    /// platform shares, if they share one: parallel-task profiles run for
    /// their work over it.
    pub host_speed: Option<f64>,
    /// The cpu, in millicores, that every compute host of the platform
    /// has, if they share one: a Batsim or SWF job needing more than one host's
    /// worth runs as one pod per host, scheduled together.
    pub host_cpu_millis: Option<u64>,
    /// The links of the one `<cluster>` every compute host belongs to, if
    /// they all belong to one: parallel tasks that communicate run for
    /// their transfers over it (see [`batsim`]).
    pub network: Option<crate::cluster::Network>,
    /// The platform's hosts and routes, when it was given as a SimGrid
    /// file: on hosts that are not alike, a parallel task's time is
    /// decided when its job is placed ([`work`]).
    pub platform: Option<std::sync::Arc<crate::routes::Platform>>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            cpu_per_resource_millis: 1000,
            memory_per_job_bytes: 0,
            swf: SwfOptions::default(),
            host_speed: None,
            host_cpu_millis: None,
            network: None,
            platform: None,
        }
    }
}

/// The pods of a job needing `all` millicores in all: one pod asking for
/// `all`, or, when that is more than `host` (the cpu every node has, if
/// they share one) and the job may span hosts, `hosts(host)` pods asking
/// for a whole host each, which the engine runs as one PodGroup.
/// Returns (cpu per pod, pods).
pub(crate) fn spread(all: u64, host: Option<u64>, hosts: impl FnOnce(u64) -> u32) -> (u64, u32) {
    match host {
        Some(host) if host > 0 && all > host => match hosts(host) {
            n if n > 1 => (host, n),
            _ => (all, 1),
        },
        _ => (all, 1),
    }
}

/// A cpu amount: a quantity string (`"1"`, `"500m"`) or a number of cores.
pub fn cpu_millis(v: &Value) -> Result<u64, String> {
    let m = match v {
        Value::Number(n) => n.as_f64().map(|c| (c * 1000.0).round() as i128),
        Value::String(s) => Quantity::parse(s).ok().map(|q| q.milli()),
        _ => None,
    }
    .ok_or_else(|| format!("{v} is not a cpu amount"))?;
    u64::try_from(m).map_err(|_| format!("{v} is negative"))
}

/// A memory amount: a quantity string (`"4Gi"`) or a number of bytes.
pub fn memory_bytes(v: &Value) -> Result<u64, String> {
    let b = match v {
        Value::Number(n) => n.as_f64().map(|b| b.round() as i128),
        Value::String(s) => Quantity::parse(s).ok().map(|q| q.milli() / 1000),
        _ => None,
    }
    .ok_or_else(|| format!("{v} is not a memory amount"))?;
    u64::try_from(b).map_err(|_| format!("{v} is negative"))
}

/// Reads a file's text, inflating it when it is gzipped.
pub fn read_text(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    text_of(bytes, &path.display().to_string())
}

/// The text of a workload's bytes, inflated when they are gzipped;
/// errors name `what`.
pub fn text_of(bytes: Vec<u8>, what: &str) -> Result<String, String> {
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .map_err(|e| format!("{what}: bad gzip data: {e}"))?;
        out
    } else {
        bytes
    };
    String::from_utf8(bytes).map_err(|_| format!("{what} is not UTF-8 text"))
}

/// What a workload file holds, by its name and content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Batsim,
    Swf,
    Manifests,
}

pub fn detect(path: &Path, text: &str) -> Format {
    let name = path.to_string_lossy().to_ascii_lowercase();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    if name.ends_with(".swf") {
        Format::Swf
    } else if name.ends_with(".json") || text.trim_start().starts_with('{') {
        Format::Batsim
    } else if name.ends_with(".yaml") || name.ends_with(".yml") {
        Format::Manifests
    } else if text.lines().any(|l| l.starts_with(';')) {
        Format::Swf
    } else {
        Format::Manifests
    }
}

/// Reads one workload file as workload `name`.
pub fn read_file(
    path: &Path,
    name: &str,
    opts: &ReadOptions,
) -> Result<(Vec<SimJob>, Skipped), String> {
    let text = read_text(path)?;
    let at = |e: String| format!("{}: {e}", path.display());
    match detect(path, &text) {
        Format::Batsim => batsim::read(&text, name, opts).map_err(at),
        Format::Swf => swf::read(&text, name, opts).map_err(at),
        Format::Manifests => manifests::read(&text, name)
            .map(|j| (j, Skipped::default()))
            .map_err(at),
    }
}
