//! The machine and build a benchmark ran on, printed before its figures so
//! that every figure says where it came from.

/// `machine: <cpu model>, <n> cores, load <1 min> <5 min> <15 min>; build: <profile>`.
pub fn describe() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_string())
        .unwrap_or_else(|| "unknown cpu".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into());
    format!(
        "machine: {model}, {cores} cores, load {load}; build: {}",
        env!("KUBESIM_BUILD_PROFILE")
    )
}
