//! The Standard Workload Format of the Parallel Workloads Archive: one job
//! per line, 18 numeric fields, `-1` unknown, `;` header lines. Gzipped
//! traces are read as they are.

use super::ReadOptions;
use crate::engine::SimJob;

/// How SWF processors become a pod's cpu.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SwfOptions {
    /// Cap a job's processors at this many (e.g. a node's cores), as
    /// Batkube did for traces from machines larger than the cluster.
    pub max_procs: Option<u32>,
    /// Scale processors so that the trace's `MaxProcs` becomes this many.
    pub normalise_to: Option<u32>,
}

/// What reading a workload skipped, for the user to see.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Skipped {
    /// Jobs with an unknown or zero run time or processor count.
    pub unknown: usize,
    /// Jobs whose profile type cannot run as a pod, by type.
    pub unsupported: std::collections::BTreeMap<String, usize>,
}

fn field(fields: &[&str], i: usize) -> Option<f64> {
    fields
        .get(i)
        .and_then(|f| f.parse::<f64>().ok())
        .filter(|v| *v >= 0.0 && v.is_finite())
}

pub fn read(
    text: &str,
    workload: &str,
    opts: &ReadOptions,
) -> Result<(Vec<SimJob>, Skipped), String> {
    let mut jobs = Vec::new();
    let mut skipped = Skipped::default();
    let mut max_procs: Option<f64> = None;
    // The SWF definition: MaxNodes stands in when MaxProcs is absent.
    let mut max_nodes: Option<f64> = None;
    let mut first_submit: Option<f64> = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(h) = line.strip_prefix(';') {
            if let Some((k, v)) = h.split_once(':') {
                match k.trim() {
                    "MaxProcs" => max_procs = v.trim().parse().ok(),
                    "MaxNodes" => max_nodes = v.trim().parse().ok(),
                    _ => {}
                }
            }
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 18 {
            return Err(format!(
                "line {}: {} fields where SWF has 18",
                n + 1,
                f.len()
            ));
        }
        let id = f[0].to_string();
        let submit = field(&f, 1).ok_or_else(|| format!("line {}: bad submit time", n + 1))?;
        let run = field(&f, 3);
        // Allocated processors, else requested ones.
        let procs = field(&f, 4)
            .filter(|p| *p > 0.0)
            .or(field(&f, 7).filter(|p| *p > 0.0));
        let (Some(run), Some(procs)) = (run.filter(|r| *r > 0.0), procs) else {
            skipped.unknown += 1;
            continue;
        };
        let mut procs = procs;
        let max = max_procs.or(max_nodes).filter(|m| *m > 0.0);
        if let (Some(to), Some(max)) = (opts.swf.normalise_to, max) {
            procs = (procs * to as f64 / max).max(procs.min(1.0));
        }
        if let Some(cap) = opts.swf.max_procs {
            procs = procs.min(cap as f64);
        }
        let start = *first_submit.get_or_insert(submit);
        let walltime = field(&f, 8).filter(|w| *w > 0.0);
        // SWF counts processors, not hosts: a job needing more cpu than
        // one node has runs on as few whole nodes as hold its processors.
        let all = ((procs * opts.cpu_per_resource_millis as f64).round() as u64).max(1);
        let (cpu_millis, hosts) = super::spread(all, opts.host_cpu_millis, |host| {
            u32::try_from(all.div_ceil(host)).unwrap_or(u32::MAX)
        });
        jobs.push(SimJob {
            id,
            workload: workload.to_string(),
            profile: format!("delay{}", run as u64),
            // Times count from the trace's first submission.
            submit: (submit - start).max(0.0),
            res: procs.ceil().max(1.0) as u32,
            walltime,
            run_time: run,
            hosts,
            cpu_millis,
            memory_bytes: opts.memory_per_job_bytes,
            scheduler: None,
            manifest: None,
            work: None,
        });
    }
    Ok((jobs, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "; MaxProcs: 100
; UnixStartTime: 0
1 100 5 60 4 -1 -1 4 120 -1 1 1 1 -1 1 1 -1 -1
2 130 0 -1 8 -1 -1 8 100 -1 0 1 1 -1 1 1 -1 -1
3 160 2 30 -1 -1 -1 50 -1 -1 1 1 1 -1 1 1 -1 -1
";

    #[test]
    fn fields_map_as_batsim_maps_them() {
        let (jobs, skipped) = read(TRACE, "w0", &ReadOptions::default()).unwrap();
        assert_eq!(skipped.unknown, 1, "job 2 has no run time");
        assert_eq!(jobs.len(), 2);
        let j = &jobs[0];
        assert_eq!(
            (j.submit, j.run_time, j.res, j.walltime),
            (0.0, 60.0, 4, Some(120.0))
        );
        assert_eq!(j.cpu_millis, 4000);
        // Requested processors stand in for unknown allocated ones.
        assert_eq!(
            (jobs[1].submit, jobs[1].res, jobs[1].walltime),
            (60.0, 50, None)
        );
    }

    #[test]
    fn caps_and_normalisation() {
        let mut o = ReadOptions::default();
        o.swf.max_procs = Some(6);
        let (jobs, _) = read(TRACE, "w0", &o).unwrap();
        assert_eq!(jobs[1].cpu_millis, 6000);
        let mut o = ReadOptions::default();
        o.swf.normalise_to = Some(10);
        let (jobs, _) = read(TRACE, "w0", &o).unwrap();
        // 50 of 100 processors becomes 5 of 10.
        assert_eq!(jobs[1].cpu_millis, 5000);
        // 4 of 100 becomes 0.4 of 10, kept at least one whole processor.
        assert_eq!(jobs[0].cpu_millis, 1000);
    }

    #[test]
    fn max_nodes_stands_in_for_max_procs() {
        let trace = TRACE.replace("; MaxProcs: 100", "; MaxNodes: 100");
        let mut o = ReadOptions::default();
        o.swf.normalise_to = Some(10);
        let (jobs, _) = read(&trace, "w0", &o).unwrap();
        assert_eq!(jobs[1].cpu_millis, 5000);
        // MaxProcs wins when both are given.
        let both = TRACE.replace("; MaxProcs: 100", "; MaxNodes: 25\n; MaxProcs: 100");
        let (jobs, _) = read(&both, "w0", &o).unwrap();
        assert_eq!(jobs[1].cpu_millis, 5000);
    }

    #[test]
    fn jobs_larger_than_a_node_span_whole_nodes() {
        // Job 1 asks for 4 processors, job 3 for 50.
        let on = |host: Option<u64>, cpu: u64| {
            let o = ReadOptions {
                host_cpu_millis: host,
                cpu_per_resource_millis: cpu,
                ..Default::default()
            };
            let (jobs, _) = read(TRACE, "w0", &o).unwrap();
            jobs.iter()
                .map(|j| (j.res, j.hosts, j.cpu_millis))
                .collect::<Vec<_>>()
        };
        // Nodes of 16 cores: both fit on one; of 4: one node, and 13.
        assert_eq!(on(Some(16_000), 1000), [(4, 1, 4000), (50, 4, 16_000)]);
        assert_eq!(on(Some(4000), 1000), [(4, 1, 4000), (50, 13, 4000)]);
        // Nodes of one core: one node per processor.
        assert_eq!(on(Some(1000), 1000), [(4, 4, 1000), (50, 50, 1000)]);
        // Half a core per processor on 2-core nodes: 2 and 25 cores.
        assert_eq!(on(Some(2000), 500), [(4, 1, 2000), (50, 13, 2000)]);
        // Nodes of different sizes: one pod, as before.
        assert_eq!(on(None, 1000), [(4, 1, 4000), (50, 1, 50_000)]);
    }

    #[test]
    fn short_lines_are_errors() {
        assert!(read("1 2 3", "w0", &ReadOptions::default())
            .unwrap_err()
            .contains("18"));
    }
}
