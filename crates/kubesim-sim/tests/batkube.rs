//! The Batkube study's workloads through the run loop: the burst gives
//! exactly greedy list scheduling, the spaced one stays within the
//! scheduler's backoff of it, the KIT jobs run on one 6-core node, and no
//! node is ever given more cpu than it has.

use std::path::PathBuf;

use kubesim_sim::cluster;
use kubesim_sim::engine::{simulate, FinalState, Run, Setup};
use kubesim_sim::output::summary::Summary;
use kubesim_sim::workload::{read_file, ReadOptions};

fn testdata(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/workloads")
        .join(rel)
}

fn run(workload: &str, platform: &str) -> (Run, Vec<u64>) {
    let (jobs, _) = read_file(&testdata(workload), "w0", &ReadOptions::default()).unwrap();
    let text = std::fs::read_to_string(testdata(platform)).unwrap();
    let nodes = cluster::nodes(&cluster::from_platform_xml(&text).unwrap());
    let cpus: Vec<u64> = nodes
        .iter()
        .map(|n| {
            let q = n["status"]["allocatable"]["cpu"].as_str().unwrap();
            kubesim_sim::workload::cpu_millis(&serde_json::json!(q)).unwrap()
        })
        .collect();
    let setup = Setup::new(nodes);
    (simulate(setup, jobs).unwrap(), cpus)
}

/// At every instant, the cpu of the jobs running on a node fits in it.
fn assert_never_overallocated(run: &Run, cpus: &[u64]) {
    for (n, cap) in cpus.iter().enumerate() {
        let mut edges: Vec<(f64, i64)> = Vec::new();
        for o in run.outcomes.iter().filter(|o| o.node == Some(n)) {
            let cpu = o.job.cpu_millis as i64;
            edges.push((o.start.unwrap(), cpu));
            edges.push((o.finish.unwrap(), -cpu));
        }
        // Ends before starts at the same instant: a freed slot is reused.
        edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut used = 0;
        for (t, d) in edges {
            used += d;
            assert!(
                used <= *cap as i64,
                "node {n} holds {used}m of {cap}m at {t}"
            );
        }
    }
}

/// Start times of first-come-first-served list scheduling on `machines`
/// identical one-job machines.
fn greedy_starts(run: &Run, machines: usize) -> Vec<f64> {
    let mut free = vec![0.0f64; machines];
    run.outcomes
        .iter()
        .map(|o| {
            let (i, at) = free
                .iter()
                .copied()
                .enumerate()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap();
            let start = at.max(o.job.submit);
            free[i] = start + o.job.run_time;
            start
        })
        .collect()
}

#[test]
fn burst_is_greedy_list_scheduling() {
    let (run, cpus) = run(
        "batkube/200_delay170.json",
        "batkube/platform_graphene_16nodes.xml",
    );
    assert_eq!(cpus.len(), 16);
    assert_never_overallocated(&run, &cpus);
    let greedy = greedy_starts(&run, 16);
    let mut starts: Vec<f64> = run.outcomes.iter().map(|o| o.start.unwrap()).collect();
    let mut want = greedy.clone();
    starts.sort_by(f64::total_cmp);
    want.sort_by(f64::total_cmp);
    assert_eq!(starts, want);
    let s = Summary::of(&run);
    assert_eq!(s.makespan, 13.0 * 170.0);
}

#[test]
fn spaced_stays_within_the_backoff_of_greedy() {
    let (run, cpus) = run(
        "batkube/spaced_200_delay170.json",
        "batkube/platform_graphene_16nodes.xml",
    );
    assert_never_overallocated(&run, &cpus);
    let greedy = greedy_starts(&run, 16);
    // kube-scheduler retries an unschedulable pod after at most 10 s of
    // backoff once a node frees up.
    for (o, g) in run.outcomes.iter().zip(&greedy) {
        let s = o.start.unwrap();
        assert!(s <= g + 10.0, "job {} started at {s}, greedy {g}", o.job.id);
    }
    assert!(run
        .outcomes
        .iter()
        .all(|o| o.state == FinalState::CompletedSuccessfully));
}

#[test]
fn kit_jobs_on_one_six_core_node() {
    let (run, cpus) = run("batkube/KIT_10h_80.json", "batkube/1node_6core.xml");
    assert_eq!(cpus, [6000]);
    assert_never_overallocated(&run, &cpus);
    let s = Summary::of(&run);
    assert_eq!(s.nb_finished, 39);
    // The jobs' own run times bound the makespan from below.
    let last_end = run
        .outcomes
        .iter()
        .map(|o| o.job.submit + o.job.run_time)
        .fold(0.0, f64::max);
    assert!(s.makespan >= last_end);
}

#[test]
fn batsim_examples_load_and_say_what_they_skip() {
    for f in [
        "batsim/test_delays.json",
        "batsim/example_workload_hpc_seed1_jobs250.json",
    ] {
        let (jobs, skipped) = read_file(&testdata(f), "w0", &ReadOptions::default()).unwrap();
        assert!(!jobs.is_empty(), "{f}");
        assert!(skipped.unsupported.is_empty(), "{f}");
    }
    let (jobs, skipped) = read_file(
        &testdata("batsim/test_long_workload.json"),
        "w0",
        &ReadOptions::default(),
    )
    .unwrap();
    let raw: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(testdata("batsim/test_long_workload.json")).unwrap(),
    )
    .unwrap();
    let total = raw["jobs"].as_array().unwrap().len();
    assert_eq!(
        jobs.len() + skipped.unsupported.values().sum::<usize>(),
        total
    );
    // Its parallel tasks communicate, and no platform is given: they are
    // skipped, and the count says why.
    assert!(skipped
        .unsupported
        .keys()
        .any(|k| k.starts_with("ParallelTaskProfile (with communication; needs a platform")));
}
