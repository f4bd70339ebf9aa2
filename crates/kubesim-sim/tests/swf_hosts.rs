//! SWF jobs larger than one node: they run on as many whole nodes as hold
//! their processors, as one PodGroup, all started together or none.

use std::path::PathBuf;

use kubesim_sim::cluster;
use kubesim_sim::engine::{simulate, FinalState, Setup};
use kubesim_sim::workload::{read_file, swf, ReadOptions};

/// Four nodes of 2 cores. Job 1 (6 processors) takes 3 of them at 0 for
/// 100 s; job 2 (4 processors, 2 nodes) arrives at 10 and must wait for
/// job 1, although one node is free; job 3 (2 processors) takes that node
/// at 20; job 4 (9 processors, 5 nodes) could never fit.
const TRACE: &str = "; MaxProcs: 8
1 0 -1 100 6 -1 -1 6 200 -1 1 1 1 -1 1 1 -1 -1
2 10 -1 50 4 -1 -1 4 200 -1 1 1 1 -1 1 1 -1 -1
3 20 -1 30 2 -1 -1 2 200 -1 1 1 1 -1 1 1 -1 -1
4 30 -1 10 9 -1 -1 9 200 -1 1 1 1 -1 1 1 -1 -1
";

/// How many hosts Batsim's interval notation (`0 2-3`) names.
fn interval_count(set: &str) -> usize {
    set.split(' ')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum()
}

#[test]
fn jobs_wider_than_a_node_run_as_groups_of_whole_nodes() {
    let nodes = cluster::nodes(&cluster::uniform(4, "2", "4Gi").unwrap());
    let opts = ReadOptions {
        host_cpu_millis: cluster::common_cpu_millis(&nodes),
        ..Default::default()
    };
    let (jobs, _) = swf::read(TRACE, "w0", &opts).unwrap();
    let shape: Vec<(u32, u32, u64)> = jobs
        .iter()
        .map(|j| (j.res, j.hosts, j.cpu_millis))
        .collect();
    assert_eq!(
        shape,
        [(6, 3, 2000), (4, 2, 2000), (2, 1, 2000), (9, 5, 2000)]
    );
    let run = simulate(Setup::new(nodes), jobs).unwrap();
    let o = &run.outcomes;
    let starts: Vec<Option<f64>> = o.iter().map(|o| o.start).collect();
    assert_eq!(starts, [Some(0.0), Some(100.0), Some(20.0), None]);
    assert_eq!(o[3].state, FinalState::Rejected);
    for (i, want) in [(0, 3), (1, 2)] {
        let mut hosts = o[i].hosts.clone();
        hosts.sort_unstable();
        hosts.dedup();
        assert_eq!(hosts.len(), want, "job {}: {:?}", o[i].job.id, o[i].hosts);
    }
    // allocated_resources names each group's nodes.
    let csv = kubesim_sim::output::jobs_csv::render(&run);
    let alloc: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(14).unwrap())
        .collect();
    let hosts: Vec<usize> = alloc.iter().map(|a| interval_count(a)).collect();
    assert_eq!(hosts, [3, 2, 1, 0], "{csv}");
}

#[test]
fn the_kth_trace_on_its_own_machine_needs_no_rejection() {
    // The IBM SP2 at KTH had 100 one-processor nodes (MaxNodes and
    // MaxProcs are both 100): on 100 one-core nodes every parallel job
    // spans one node per processor, and none is wider than the cluster.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/workloads/swf/KTH-SP2-1996-2.1-cln.swf.gz");
    let opts = ReadOptions {
        host_cpu_millis: Some(1000),
        ..Default::default()
    };
    let (jobs, _) = read_file(&path, "w0", &opts).unwrap();
    let spanning = jobs.iter().filter(|j| j.hosts > 1).count();
    assert!(jobs.iter().all(|j| j.hosts == j.res && j.hosts <= 100));
    assert_eq!((jobs.len(), spanning), (28_467, 19_099));
}
