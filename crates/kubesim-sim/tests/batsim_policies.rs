//! Batsim's reference policies, `BatsimFCFS` and `BatsimEASYBackfilling`,
//! enabled from the configuration files in `testdata/scheduler-config`:
//! on identical hosts with rigid jobs, the start times worked out by hand
//! (written beside each case), and Batsim's own workload run to the end.

use std::path::PathBuf;

use kubesim_scheduler::SchedulerConfig;
use kubesim_sim::cluster;
use kubesim_sim::engine::{simulate, FinalState, Run, Setup};
use kubesim_sim::workload::{batsim, read_file, ReadOptions};
use serde_json::{json, Value};

fn testdata(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(rel)
}

fn config(policy: &str) -> SchedulerConfig {
    SchedulerConfig::from_file(&testdata(&format!("scheduler-config/batsim-{policy}.yaml")))
        .unwrap()
}

/// `hosts` identical one-core hosts.
fn hosts(n: u32) -> Vec<Value> {
    cluster::nodes(&cluster::uniform(n, "1", "4Gi").unwrap())
}

/// A Batsim workload of delay jobs: (id, submitted, res, run time,
/// walltime).
fn workload(jobs: &[(&str, f64, u32, f64, f64)]) -> String {
    let mut profiles = serde_json::Map::new();
    let jobs: Vec<Value> = jobs
        .iter()
        .map(|&(id, at, res, run, wall)| {
            profiles.insert(format!("p{id}"), json!({"type": "delay", "delay": run}));
            json!({"id": id, "subtime": at, "res": res, "walltime": wall, "profile": format!("p{id}")})
        })
        .collect();
    json!({"nb_res": 0, "jobs": jobs, "profiles": profiles}).to_string()
}

fn run(policy: &str, n: u32, jobs: &[(&str, f64, u32, f64, f64)]) -> Run {
    let nodes = hosts(n);
    let opts = ReadOptions {
        host_cpu_millis: cluster::common_cpu_millis(&nodes),
        ..Default::default()
    };
    let (jobs, _) = batsim::read(&workload(jobs), "w0", &opts).unwrap();
    let mut setup = Setup::new(nodes);
    setup.scheduler = config(policy);
    simulate(setup, jobs).unwrap()
}

/// Each job's start time, by id, read back from `jobs.csv`.
fn starts(run: &Run) -> Vec<(String, f64)> {
    let csv = kubesim_sim::output::jobs_csv::render(run);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (id, start) = (col("job_id"), col("starting_time"));
    let mut out: Vec<(String, f64)> = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[id].to_string(), f[start].parse().unwrap())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    for o in &run.outcomes {
        assert_eq!(o.state, FinalState::CompletedSuccessfully, "{}", o.job.id);
    }
    out
}

fn expect(run: &Run, want: &[(&str, f64)]) {
    let got = starts(run);
    let want: Vec<(String, f64)> = want.iter().map(|(i, t)| (i.to_string(), *t)).collect();
    assert_eq!(got, want);
}

// 4 hosts. A (2 hosts, 10 s) at 0, B (4 hosts, 5 s) at 1, C (1 host,
// 3 s) at 2; walltimes equal to run times.
const SMALL: &[(&str, f64, u32, f64, f64)] = &[
    ("a", 0.0, 2, 10.0, 10.0),
    ("b", 1.0, 4, 5.0, 5.0),
    ("c", 2.0, 1, 3.0, 3.0),
];

#[test]
fn fcfs_keeps_later_jobs_behind_the_first_waiting_one() {
    // A runs 0-10. B needs every host: it waits for A, 10-15. C would fit
    // beside A at 2 but is behind B: 15-18.
    expect(
        &run("fcfs", 4, SMALL),
        &[("a", 0.0), ("b", 10.0), ("c", 15.0)],
    );
}

#[test]
fn easy_backfills_a_job_that_ends_before_the_reservation() {
    // B's reservation is at 10, when A's walltime runs out. C, submitted
    // at 2 with 3 s requested, ends at 5: it starts at once.
    expect(
        &run("easy", 4, SMALL),
        &[("a", 0.0), ("b", 10.0), ("c", 2.0)],
    );
}

// 4 hosts; A ends at 4, well before its walltime of 10.
const EARLY: &[(&str, f64, u32, f64, f64)] = &[
    ("a", 0.0, 2, 4.0, 10.0),
    ("b", 1.0, 4, 5.0, 5.0),
    ("c", 2.0, 1, 3.0, 7.0),
    ("d", 3.0, 1, 2.0, 2.0),
];

#[test]
fn fcfs_starts_the_head_when_a_job_ends_early() {
    // A ends at 4: B takes every host, 4-9; then C and D together at 9.
    expect(
        &run("fcfs", 4, EARLY),
        &[("a", 0.0), ("b", 4.0), ("c", 9.0), ("d", 9.0)],
    );
}

#[test]
fn easy_plans_with_walltimes_and_replans_when_jobs_end() {
    // At 2, B's reservation is at 10 (A's walltime): C (2 + 7 <= 10)
    // starts, and runs 3 s, to 5. At 3, D (3 + 2 <= 10) starts on the
    // last host, to 5. A really ends at 4; B starts when C and D have
    // ended, at 5.
    expect(
        &run("easy", 4, EARLY),
        &[("a", 0.0), ("b", 5.0), ("c", 2.0), ("d", 3.0)],
    );
}

// A long job C (20 s) behind B.
const LONG: &[(&str, f64, u32, f64, f64)] = &[
    ("a", 0.0, 2, 10.0, 10.0),
    ("b", 1.0, 4, 5.0, 5.0),
    ("c", 2.0, 1, 20.0, 20.0),
];

#[test]
fn easy_does_not_backfill_what_would_delay_the_reservation() {
    // On 4 hosts B needs them all at 10: C, still running then, would
    // delay it. C waits for B: 15-35.
    expect(
        &run("easy", 4, LONG),
        &[("a", 0.0), ("b", 10.0), ("c", 15.0)],
    );
}

#[test]
fn easy_backfills_a_long_job_on_a_host_the_reservation_leaves_spare() {
    // On 5 hosts, B needs 4 of the 5 free at 10: C runs on the fifth from
    // 2. FCFS holds it behind B until B starts at 10; C then takes the
    // fifth host, 10-30.
    expect(
        &run("easy", 5, LONG),
        &[("a", 0.0), ("b", 10.0), ("c", 2.0)],
    );
    expect(
        &run("fcfs", 5, LONG),
        &[("a", 0.0), ("b", 10.0), ("c", 10.0)],
    );
}

// Events at one instant are planned together, as Batsim sends them in
// one message. Two hosts; A1 and A2 really end at 10, long before their
// walltimes of 100.
const TWO_ENDS: &[(&str, f64, u32, f64, f64)] = &[
    ("a1", 0.0, 1, 10.0, 100.0),
    ("a2", 0.0, 1, 10.0, 100.0),
    ("b", 1.0, 2, 5.0, 5.0),
    ("d", 2.0, 1, 5.0, 50.0),
];

#[test]
fn easy_plans_two_ends_at_one_instant_together() {
    // B's reservation is at 100; D (2 + 50 <= 100) could backfill but
    // finds no free host. At 10 both hosts free at once: B, the first
    // waiting job, takes them, 10-15, and D follows at 15. Planned after
    // the first end alone, D would take the one free host at 10 and push
    // B back to 15.
    expect(
        &run("easy", 2, TWO_ENDS),
        &[("a1", 0.0), ("a2", 0.0), ("b", 10.0), ("d", 15.0)],
    );
}

// C arrives at 10, the instant A ends.
const END_AND_ARRIVAL: &[(&str, f64, u32, f64, f64)] = &[
    ("a", 0.0, 1, 10.0, 100.0),
    ("b", 1.0, 2, 5.0, 5.0),
    ("c", 10.0, 1, 5.0, 5.0),
];

#[test]
fn easy_plans_an_end_and_an_arrival_at_one_instant_together() {
    // At 10 A's host is free and C has arrived: B, first in line, takes
    // both hosts, 10-15, and C waits until 15. Planned on C's arrival
    // before A's end, C (10 + 5 <= B's reservation at 100) would take the
    // free host and push B back to 15.
    expect(
        &run("easy", 2, END_AND_ARRIVAL),
        &[("a", 0.0), ("b", 10.0), ("c", 15.0)],
    );
}

#[test]
fn a_profile_enabling_both_policies_is_refused() {
    let e = SchedulerConfig::parse(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: BatsimFCFS\n      - name: BatsimEASYBackfilling\n",
    )
    .unwrap_err();
    assert!(e.contains("both"), "{e}");
    assert_eq!(e.lines().count(), 1);
}

#[test]
fn batsims_hpc_workload_completes_under_both_policies() {
    // Batsim's HPC example on the 128 hosts it states (`nb_res`), where
    // jobs of 4 to 128 hosts queue.
    let nodes = hosts(128);
    let opts = ReadOptions {
        host_cpu_millis: cluster::common_cpu_millis(&nodes),
        ..Default::default()
    };
    let (jobs, _) = read_file(
        &testdata("workloads/batsim/example_workload_hpc_seed1_jobs250.json"),
        "w0",
        &opts,
    )
    .unwrap();
    assert_eq!(jobs.len(), 250);
    let mut makespans = Vec::new();
    for policy in ["fcfs", "easy"] {
        let mut setup = Setup::new(nodes.clone());
        setup.scheduler = config(policy);
        let run = simulate(setup, jobs.clone()).unwrap();
        for o in &run.outcomes {
            assert!(
                matches!(
                    o.state,
                    FinalState::CompletedSuccessfully | FinalState::CompletedWalltimeReached
                ),
                "{policy}: job {}: {:?}",
                o.job.id,
                o.state
            );
        }
        // Under FCFS no job starts before one submitted earlier; EASY
        // backfills some.
        let mut by_submit: Vec<_> = run.outcomes.iter().collect();
        by_submit.sort_by(|a, b| a.job.submit.total_cmp(&b.job.submit));
        let mut overtaken = 0;
        for (k, later) in by_submit.iter().enumerate() {
            if by_submit[..k]
                .iter()
                .any(|earlier| earlier.start > later.start)
            {
                overtaken += 1;
            }
        }
        if policy == "fcfs" {
            assert_eq!(overtaken, 0, "a job started before an earlier one");
        } else {
            assert!(overtaken > 0, "no job was backfilled");
        }
        let end = run
            .outcomes
            .iter()
            .filter_map(|o| o.finish)
            .fold(0.0, f64::max);
        makespans.push(end);
    }
    eprintln!("makespan: FCFS {} s, EASY {} s", makespans[0], makespans[1]);
}

#[test]
fn a_policy_run_gives_the_same_bytes_twice() {
    for policy in ["fcfs", "easy"] {
        let a = kubesim_sim::output::jobs_csv::render(&run(policy, 4, EARLY));
        let b = kubesim_sim::output::jobs_csv::render(&run(policy, 4, EARLY));
        assert_eq!(a, b, "{policy}");
    }
}
