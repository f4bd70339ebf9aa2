//! The run loop on small workloads whose schedules are worked out by hand.

use kubesim_sim::engine::{simulate, FinalState, Run, Setup, SimJob};
use serde_json::{json, Value};

fn node(name: &str, cpu: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
        "status": {"capacity": {"cpu": cpu, "memory": "4Gi", "pods": "110"},
                   "allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "110"}}})
}

fn job(id: &str, submit: f64, run: f64, cpu: u64) -> SimJob {
    SimJob {
        id: id.into(),
        workload: "w0".into(),
        profile: "delay".into(),
        submit,
        res: 1,
        walltime: None,
        run_time: run,
        hosts: 1,
        cpu_millis: cpu,
        memory_bytes: 0,
        scheduler: None,
        manifest: None,
        work: None,
    }
}

fn setup(nodes: Vec<Value>) -> Setup {
    Setup::new(nodes)
}

fn times(run: &Run) -> Vec<(Option<f64>, Option<f64>, FinalState)> {
    run.outcomes
        .iter()
        .map(|o| (o.start, o.finish, o.state))
        .collect()
}

#[test]
fn a_queue_forms_when_the_cluster_is_full() {
    // Two 1-cpu nodes, three 1-cpu jobs of 10 s at t=0: two run at once,
    // the third waits for the first to finish. A 4-cpu job never fits.
    let jobs = vec![
        job("1", 0.0, 10.0, 1000),
        job("2", 0.0, 10.0, 1000),
        job("3", 0.0, 10.0, 1000),
        job("big", 5.0, 1.0, 4000),
    ];
    let run = simulate(setup(vec![node("n0", "1"), node("n1", "1")]), jobs).unwrap();
    let t = times(&run);
    use FinalState::*;
    assert_eq!(
        t[0],
        (Some(0.0), Some(10.0), CompletedSuccessfully),
        "{t:?}"
    );
    assert_eq!(
        t[1],
        (Some(0.0), Some(10.0), CompletedSuccessfully),
        "{t:?}"
    );
    assert_eq!(
        t[2],
        (Some(10.0), Some(20.0), CompletedSuccessfully),
        "{t:?}"
    );
    assert_eq!(t[3].2, Rejected);
    let nodes: Vec<Option<usize>> = run.outcomes.iter().map(|o| o.node).collect();
    assert_ne!(nodes[0], nodes[1]);
    assert!(nodes[..3].iter().all(|n| n.is_some()));
    assert_eq!(run.total_cpu_millis, 2000);
    // At most both nodes' cpu in use, and one job queued at the start.
    assert!(run.samples.iter().all(|s| s.cpu_millis_used <= 2000));
    assert_eq!(run.samples.iter().map(|s| s.queued).max(), Some(1));
}

#[test]
fn walltime_kills_and_late_submissions() {
    let mut capped = job("capped", 0.0, 500.0, 500);
    capped.walltime = Some(60.0);
    let later = job("later", 3600.0, 30.0, 500);
    let run = simulate(setup(vec![node("n0", "1")]), vec![capped, later]).unwrap();
    let t = times(&run);
    assert_eq!(
        t[0],
        (Some(0.0), Some(60.0), FinalState::CompletedWalltimeReached)
    );
    assert_eq!(
        t[1],
        (
            Some(3600.0),
            Some(3630.0),
            FinalState::CompletedSuccessfully
        )
    );
    assert_eq!(run.simulated.round(), 3630.0);
}

#[test]
fn the_same_input_gives_the_same_run() {
    let jobs: Vec<SimJob> = (0..40)
        .map(|i| {
            job(
                &i.to_string(),
                (i % 7) as f64 * 3.0,
                5.0 + (i % 5) as f64,
                250 * (1 + i % 3),
            )
        })
        .collect();
    let nodes = || vec![node("a", "1"), node("b", "2"), node("c", "1")];
    let one = simulate(setup(nodes()), jobs.clone()).unwrap();
    let two = simulate(setup(nodes()), jobs).unwrap();
    assert_eq!(one.outcomes, two.outcomes);
    assert_eq!(one.samples, two.samples);
    assert!(one
        .outcomes
        .iter()
        .all(|o| o.state == FinalState::CompletedSuccessfully));
}

#[test]
fn manifests_arrive_on_time_and_jobs_complete_all_their_pods() {
    let text = "apiVersion: batch/v1
kind: Job
metadata: {name: batch, annotations: {kubesim.io/arrival: 5s}}
spec:
  completions: 2
  parallelism: 1
  template:
    metadata: {annotations: {kubesim.io/run-duration: 10s}}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: i, resources: {requests: {cpu: 500m}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: i}]}
";
    let jobs = kubesim_sim::workload::manifests::read(text, "w0").unwrap();
    let run = simulate(setup(vec![node("n0", "2")]), jobs).unwrap();
    let web = run.outcomes.iter().find(|o| o.job.id == "web").unwrap();
    assert_eq!(web.state, FinalState::NotFollowed);
    let batch = run.outcomes.iter().find(|o| o.job.id == "batch").unwrap();
    // One pod at a time, two completions: 5 s + 10 s + 10 s.
    assert_eq!(
        (batch.start, batch.finish, batch.state),
        (Some(5.0), Some(25.0), FinalState::CompletedSuccessfully)
    );
    assert_eq!(
        run.samples.iter().map(|s| s.cpu_millis_used).max(),
        Some(500)
    );
}

#[test]
fn a_run_without_a_scheduler_says_nothing_ran_and_why() {
    let mut s = setup(vec![node("n0", "2")]);
    s.builtin_scheduler = false;
    let run = simulate(
        s,
        vec![job("1", 0.0, 10.0, 1000), job("2", 5.0, 10.0, 1000)],
    )
    .unwrap();
    assert!(run.outcomes.iter().all(|o| o.start.is_none()));
    assert_eq!(
        run.nothing_ran(false).as_deref(),
        Some("0 of 2 jobs ran: no scheduler bound a pod")
    );

    // With the scheduler, the same jobs run and nothing is said.
    let run = simulate(
        setup(vec![node("n0", "2")]),
        vec![job("1", 0.0, 10.0, 1000), job("2", 5.0, 10.0, 1000)],
    )
    .unwrap();
    assert_eq!(run.nothing_ran(true), None);
}

#[test]
fn a_run_whose_jobs_never_fit_says_so() {
    let run = simulate(
        setup(vec![node("n0", "1")]),
        vec![job("big", 0.0, 1.0, 4000)],
    )
    .unwrap();
    let why = run.nothing_ran(true).expect("nothing ran");
    assert!(why.starts_with("0 of 1 jobs ran: "), "{why}");
    assert!(!why.contains("no scheduler"), "{why}");
}

#[test]
fn controllers_can_be_turned_off_in_a_simulation() {
    // A Job manifest at t=0: its pod exists only if the job controller
    // runs; a plain job's pod needs no controller.
    let manifest = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "batch", "namespace": "default"},
        "spec": {"template": {"metadata": {"annotations": {"kubesim.io/run-duration": "5s"}},
            "spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox",
                    "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}]}}}});
    let mut batch = job("batch", 0.0, 5.0, 1000);
    batch.manifest = Some(manifest);
    let plain = job("plain", 10.0, 1.0, 1000);
    for (controllers, job_ran) in [("*", true), ("*,-job-controller", false), ("none", false)] {
        let mut s = setup(vec![node("n0", "4")]);
        s.controllers = kubesim_controllers::Controllers::parse(controllers).unwrap();
        s.until = Some(std::time::Duration::from_secs(60));
        let run = simulate(s, vec![batch.clone(), plain.clone()]).unwrap();
        assert_eq!(run.outcomes[0].start.is_some(), job_ran, "{controllers}");
        assert_eq!(
            run.outcomes[1].state,
            FinalState::CompletedSuccessfully,
            "{controllers}"
        );
    }
}

#[test]
fn a_gang_starts_only_when_all_its_pods_fit() {
    // Two 1-cpu nodes; a lone pod holds one for 30 s from t=0. At t=1 a
    // Job of two 1-cpu pods in a PodGroup of 2 arrives: with Coscheduling
    // both wait for the lone pod to finish and start together at 30;
    // without it one starts at once and the other when a node frees.
    let text = "apiVersion: v1
kind: Pod
metadata: {name: blocker, annotations: {kubesim.io/run-duration: 30s}}
spec: {restartPolicy: Never, containers: [{name: c, image: i, resources: {requests: {cpu: '1'}}}]}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: pair, namespace: default}
spec: {minMember: 2}
---
apiVersion: batch/v1
kind: Job
metadata: {name: gang, annotations: {kubesim.io/arrival: 1s}}
spec:
  completions: 2
  parallelism: 2
  template:
    metadata:
      labels: {scheduling.x-k8s.io/pod-group: pair}
      annotations: {kubesim.io/run-duration: 10s}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: i, resources: {requests: {cpu: '1'}}}]
";
    let config = kubesim_scheduler::SchedulerConfig::parse(
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    multiPoint:
      enabled: [{name: Coscheduling}]
",
    )
    .unwrap();
    let run_with = |gang: bool| {
        let mut s = setup(vec![node("n0", "1"), node("n1", "1")]);
        if gang {
            s.scheduler = config.clone();
        }
        let jobs = kubesim_sim::workload::manifests::read(text, "w0").unwrap();
        let run = simulate(s, jobs).unwrap();
        let o = run.outcomes.iter().find(|o| o.job.id == "gang").unwrap();
        (o.start, o.finish, o.state)
    };
    assert_eq!(
        run_with(true),
        (Some(30.0), Some(40.0), FinalState::CompletedSuccessfully)
    );
    assert_eq!(run_with(false).0, Some(1.0));
}

#[test]
fn a_job_on_several_hosts_starts_when_all_its_pods_run() {
    // Three 1-cpu nodes; a lone job holds one for 30 s. A job on three
    // hosts arriving at t=1 cannot start on the two free ones: all three
    // of its pods start together at 30, one per node.
    let mut par = job("par", 1.0, 10.0, 1000);
    par.res = 3;
    par.hosts = 3;
    let run = simulate(
        setup(vec![node("n0", "1"), node("n1", "1"), node("n2", "1")]),
        vec![job("lone", 0.0, 30.0, 1000), par],
    )
    .unwrap();
    let o = &run.outcomes[1];
    assert_eq!(
        (o.start, o.finish, o.state),
        (Some(30.0), Some(40.0), FinalState::CompletedSuccessfully)
    );
    let mut hosts = o.hosts.clone();
    hosts.sort_unstable();
    assert_eq!(hosts, [0, 1, 2]);
    let csv = kubesim_sim::output::jobs_csv::render(&run);
    assert!(csv.lines().nth(2).unwrap().contains(",0-2,"), "{csv}");
}
