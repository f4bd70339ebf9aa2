//! Batsim's own platforms and profile-type workloads: hosts found as
//! Batsim finds them, and every job that runs as a pod given the run time
//! Batsim's tests expect of it (`expected_execution_time`).

use std::path::PathBuf;

use kubesim_sim::cluster;
use kubesim_sim::workload::{read_file, ReadOptions};
use serde_json::Value;

fn batsim(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/workloads/batsim")
        .join(rel)
}

fn platform(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(batsim(&format!("platforms/{name}"))).unwrap();
    cluster::nodes(&cluster::from_platform_xml(&text).unwrap())
}

#[test]
fn platforms_give_their_compute_hosts() {
    let big = platform("cluster512.xml");
    assert_eq!(big.len(), 512, "the master cluster is not a compute node");
    assert_eq!(big[0]["metadata"]["name"], "a0");
    assert_eq!(cluster::common_speed(&big), Some(1e9));
    let small = platform("small_platform.xml");
    let names: Vec<&str> = small
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["jupiter", "fafard", "ginette", "bourassa"]);
    assert_eq!(cluster::common_speed(&small), None, "two speeds");
    assert!(!platform("graphene.xml").is_empty());
}

#[test]
fn run_times_are_the_ones_batsim_expects() {
    // Batsim's tests run these on cluster512.xml: 1 Gf hosts, 1 GBps
    // links of 5 us, a 3 GBps backbone of 3 us.
    let nodes = platform("cluster512.xml");
    let opts = ReadOptions {
        host_speed: Some(1e9),
        network: cluster::common_network(&nodes),
        ..Default::default()
    };
    assert_eq!(
        opts.network,
        Some(cluster::Network {
            link_bandwidth: 1e9,
            link_latency: 5e-6,
            backbone: Some((3e9, 3e-6)),
        })
    );
    let mut checked = 0;
    let mut communicating = 0;
    for file in [
        "test_compo_sequence_delay.json",
        "test_compo_sequence_ptaskcomp.json",
        "test_homo_ptasks.json",
        "test_ptasks.json",
        "test_various_profile_types.json",
    ] {
        let text = std::fs::read_to_string(batsim(file)).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        let (jobs, skipped) = read_file(&batsim(file), "w0", &opts).unwrap();
        for j in &jobs {
            let Some(want) = doc["profiles"][&j.profile]["expected_execution_time"].as_f64() else {
                continue;
            };
            let com = &doc["profiles"][&j.profile]["com"];
            if com.as_f64().is_some_and(|c| c > 0.0)
                || com
                    .as_array()
                    .is_some_and(|a| a.iter().any(|c| c.as_f64() > Some(0.0)))
            {
                communicating += 1;
            }
            assert!(
                (j.run_time - want).abs() < 1e-9,
                "{file} job {}: {} s, Batsim expects {want} s",
                j.id,
                j.run_time
            );
            checked += 1;
        }
        // With the platform's links, no parallel task is skipped.
        for kind in skipped.unsupported.keys() {
            assert!(!kind.contains("ParallelTask"), "{file}: {kind}");
        }
    }
    assert!(checked >= 40, "only {checked} jobs had an expected time");
    assert!(
        communicating >= 10,
        "only {communicating} communicating jobs were checked"
    );
    // Without a shared speed, parallel tasks are skipped, and say why.
    let (jobs, skipped) = read_file(
        &batsim("test_homo_ptasks.json"),
        "w0",
        &ReadOptions::default(),
    )
    .unwrap();
    assert!(jobs.is_empty());
    assert!(skipped
        .unsupported
        .keys()
        .any(|k| k.contains("needs a platform whose compute hosts share one speed")));
}

#[test]
fn parallel_jobs_run_on_as_many_hosts_as_they_ask_for() {
    // Batsim's HPC example: jobs of 4 to 128 hosts on a platform of 512
    // one-core hosts. Each runs as one pod per host, started together.
    let nodes = platform("cluster512.xml");
    let opts = ReadOptions {
        host_speed: cluster::common_speed(&nodes),
        host_cpu_millis: cluster::common_cpu_millis(&nodes),
        ..Default::default()
    };
    assert_eq!(opts.host_cpu_millis, Some(1000));
    let (jobs, _) = read_file(
        &batsim("example_workload_hpc_seed1_jobs250.json"),
        "w0",
        &opts,
    )
    .unwrap();
    assert_eq!(jobs.len(), 250);
    assert!(jobs
        .iter()
        .all(|j| j.hosts == j.res && j.cpu_millis == 1000));
    let run = kubesim_sim::engine::simulate(kubesim_sim::engine::Setup::new(nodes), jobs).unwrap();
    use kubesim_sim::engine::FinalState;
    let rejected = run
        .outcomes
        .iter()
        .filter(|o| o.state == FinalState::Rejected)
        .count();
    assert_eq!(rejected, 0);
    for o in &run.outcomes {
        assert!(
            matches!(
                o.state,
                FinalState::CompletedSuccessfully | FinalState::CompletedWalltimeReached
            ),
            "job {}: {:?}",
            o.job.id,
            o.state
        );
        let mut hosts = o.hosts.clone();
        hosts.sort_unstable();
        hosts.dedup();
        assert_eq!(hosts.len(), o.job.res as usize, "job {} hosts", o.job.id);
    }
    // allocated_resources lists the hosts in Batsim's interval notation.
    let csv = kubesim_sim::output::jobs_csv::render(&run);
    let first = csv.lines().nth(1).unwrap();
    let alloc = first.split(',').nth(14).unwrap();
    let count: usize = alloc
        .split(' ')
        .map(|part| match part.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum();
    assert_eq!(count, run.outcomes[0].job.res as usize, "{first}");
}

#[test]
fn simulated_jobs_keep_their_run_times_to_the_microsecond() {
    // Batsim's test_ptasks.json on cluster512.xml, simulated: each job's
    // execution_time in jobs.csv is the expected_execution_time, to the
    // microsecond (10 GB between two hosts: 10.000013 s), though the
    // simulated clock moves in milliseconds; jobs past their walltime
    // end at it.
    let nodes = platform("cluster512.xml");
    let opts = ReadOptions {
        host_speed: cluster::common_speed(&nodes),
        host_cpu_millis: cluster::common_cpu_millis(&nodes),
        network: cluster::common_network(&nodes),
        ..Default::default()
    };
    let file = batsim("test_ptasks.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let (jobs, _) = read_file(&file, "w0", &opts).unwrap();
    assert!(jobs.len() >= 5, "{} jobs", jobs.len());
    let run = kubesim_sim::engine::simulate(kubesim_sim::engine::Setup::new(nodes), jobs).unwrap();
    let csv = kubesim_sim::output::jobs_csv::render(&run);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let mut fractional = 0;
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let profile = f[col("profile")];
        // A job whose walltime is shorter is killed at its walltime.
        let want = doc["profiles"][profile]["expected_execution_time"]
            .as_f64()
            .unwrap()
            .min(f[col("requested_time")].parse().unwrap());
        let got: f64 = f[col("execution_time")].parse().unwrap();
        assert!(
            (got - want).abs() < 1e-6,
            "job {}: execution_time {got}, Batsim expects {want}",
            f[col("job_id")]
        );
        let start: f64 = f[col("starting_time")].parse().unwrap();
        let finish: f64 = f[col("finish_time")].parse().unwrap();
        assert!((finish - start - got).abs() < 1e-6, "{line}");
        if (want * 1000.0).fract().abs() > 1e-6 {
            fractional += 1;
        }
    }
    assert!(fractional >= 3, "only {fractional} run times below the ms");
}

#[test]
fn on_hosts_of_different_speeds_a_job_is_timed_where_it_is_placed() {
    // Batsim's small_platform.xml: Jupiter and Fafard at 76.296 Mf,
    // Ginette and Bourassa at 48.492 Mf, one core each, joined by routes
    // of shared links.
    let text = std::fs::read_to_string(batsim("platforms/small_platform.xml")).unwrap();
    let nodes = platform("small_platform.xml");
    let names: Vec<String> = nodes
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let routes =
        std::sync::Arc::new(kubesim_sim::routes::Platform::from_xml(&text, &names).unwrap());
    let opts = ReadOptions {
        host_speed: cluster::common_speed(&nodes),
        host_cpu_millis: cluster::common_cpu_millis(&nodes),
        network: cluster::common_network(&nodes),
        platform: Some(routes.clone()),
        ..Default::default()
    };
    // Four one-host jobs of 100 Mflop at 0, one on each host; at 100, a
    // job on all four where every host sends 1 MB to every other.
    let workload = r#"{"nb_res": 4, "jobs": [
        {"id": "c0", "subtime": 0, "res": 1, "profile": "compute"},
        {"id": "c1", "subtime": 0, "res": 1, "profile": "compute"},
        {"id": "c2", "subtime": 0, "res": 1, "profile": "compute"},
        {"id": "c3", "subtime": 0, "res": 1, "profile": "compute"},
        {"id": "all", "subtime": 100, "res": 4, "profile": "exchange"}],
      "profiles": {
        "compute": {"type": "parallel", "cpu": [1e8], "com": [0]},
        "exchange": {"type": "parallel_homogeneous", "cpu": 0, "com": 1e6}}}"#;
    let (jobs, skipped) = kubesim_sim::workload::batsim::read(workload, "w0", &opts).unwrap();
    assert!(skipped.unsupported.is_empty(), "{skipped:?}");
    assert_eq!(jobs.len(), 5);
    assert!(jobs.iter().all(|j| j.work.is_some()));
    let mut setup = kubesim_sim::engine::Setup::new(nodes);
    setup.platform = Some(routes);
    let run = kubesim_sim::engine::simulate(setup, jobs).unwrap();
    let csv = kubesim_sim::output::jobs_csv::render(&run);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let mut compute = Vec::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f[col("final_state")], "COMPLETED_SUCCESSFULLY", "{line}");
        let took: f64 = f[col("execution_time")].parse().unwrap();
        if f[col("job_id")] == "all" {
            // Every route among the four carries 1 MB each way over shared
            // links. Link 9 (7.20975 MBps) is on Jupiter's three routes:
            // 6 MB, 0.832206 s. The longest route, Jupiter-Fafard (links
            // 9 4 3 2 0 1 8), has 3,437.542 us of latency.
            let want = 6e6 / 7.20975e6 + 3437.542e-6;
            assert!(
                (took - want).abs() < 1e-6,
                "exchange took {took}, want {want}"
            );
            continue;
        }
        // 100 Mflop over the speed of the host it got.
        let host: usize = f[col("allocated_resources")].parse().unwrap();
        let speed = [76.296e6, 76.296e6, 48.492e6, 48.492e6][host];
        assert!((took - 1e8 / speed).abs() < 1e-6, "{line}");
        compute.push(took);
    }
    compute.sort_by(f64::total_cmp);
    // 1.310685 s on the two fast hosts, 2.062196 s on the slow ones.
    assert!(
        (compute[0] - 1.310685).abs() < 1e-6 && (compute[3] - 2.062196).abs() < 1e-6,
        "{compute:?}"
    );
}
