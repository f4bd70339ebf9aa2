//! Idle time is free: a run's work grows with its jobs and events, not
//! with its simulated span. The same jobs, with a year between groups of
//! them, wake the cluster's components as often as without the gaps.
//! Wake-ups are counted, not timed: `Run::timers_fired` counts every
//! sleep or timeout of any component that ran out.

use kubesim_sim::cluster;
use kubesim_sim::engine::{simulate, FinalState, Run, Setup, SimJob};

const YEAR: f64 = 365.0 * 86_400.0;

/// 200 one-host jobs of 100 s, one every 30 s, in 10 groups of 20; each
/// group `gap` seconds after the one before.
fn jobs(gap: f64) -> Vec<SimJob> {
    (0..200)
        .map(|i| SimJob {
            id: i.to_string(),
            workload: "w0".into(),
            profile: "d".into(),
            submit: i as f64 * 30.0 + (i / 20) as f64 * gap,
            res: 1,
            walltime: None,
            run_time: 100.0,
            hosts: 1,
            cpu_millis: 1000,
            memory_bytes: 0,
            scheduler: None,
            manifest: None,
            work: None,
        })
        .collect()
}

fn run(gap: f64) -> Run {
    let nodes = cluster::nodes(&cluster::uniform(4, "1", "4Gi").unwrap());
    let run = simulate(Setup::new(nodes), jobs(gap)).unwrap();
    for o in &run.outcomes {
        assert_eq!(o.state, FinalState::CompletedSuccessfully, "{}", o.job.id);
    }
    run
}

#[test]
fn years_without_jobs_cost_no_wake_ups() {
    let plain = run(0.0);
    let gapped = run(YEAR);
    assert!(gapped.simulated > 9.0 * YEAR, "{}", gapped.simulated);
    eprintln!(
        "timers fired: {} without gaps, {} with 9 gaps of a year",
        plain.timers_fired, gapped.timers_fired
    );
    // Each gap may cost a few wake-ups (a group's last job ending, the
    // next arriving), not one per period of some timer over a year.
    assert!(
        gapped.timers_fired <= plain.timers_fired + 9 * 10,
        "{} wake-ups with gaps, {} without",
        gapped.timers_fired,
        plain.timers_fired
    );
}
