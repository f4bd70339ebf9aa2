//! End-to-end: `kubesim simulate` on Batkube's and Batsim's workloads,
//! with results checked against schedules worked out by hand, and the
//! same inputs giving the same bytes.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/scratch.rs"]
mod scratch;
use scratch::Scratch;

fn testdata(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(rel)
}

fn simulate(args: &[&str], out: &Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_kubesim"))
        .arg("simulate")
        .args(args)
        .arg("--out")
        .arg(out)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "kubesim simulate failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn out_dir(name: &str) -> Scratch {
    Scratch::new(&format!("sim-{name}"))
}

fn schedule(dir: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dir.join("schedule.csv")).unwrap();
    let mut lines = text.lines();
    let h: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    let v: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    h.into_iter().zip(v).collect()
}

fn get(s: &[(String, String)], k: &str) -> f64 {
    s.iter().find(|(h, _)| h == k).unwrap().1.parse().unwrap()
}

#[test]
fn batkube_burst_on_sixteen_nodes() {
    let a = out_dir("burst-a");
    let b = out_dir("burst-b");
    let wl = testdata("workloads/batkube/200_delay170.json");
    let platform = testdata("workloads/batkube/platform_graphene_16nodes.xml");
    let args = [
        "--workload",
        wl.to_str().unwrap(),
        "--cluster",
        platform.to_str().unwrap(),
    ];
    let printed = simulate(&args, &a);
    assert!(printed.contains("200 jobs on 16 nodes"), "{printed}");
    // 200 jobs of 170 s on 16 one-cpu workers: 13 waves (12 of 16, one of
    // 8), so the makespan is 13 x 170 s and the mean wait
    // (16 x 170 x (0+..+11) + 8 x 170 x 12) / 200 = 979.2 s.
    let s = schedule(&a);
    assert_eq!(get(&s, "makespan"), 2210.0);
    assert_eq!(get(&s, "mean_waiting_time"), 979.2);
    assert_eq!(get(&s, "max_waiting_time"), 2040.0);
    assert_eq!(get(&s, "nb_jobs_success"), 200.0);
    let jobs = std::fs::read_to_string(a.join("jobs.csv")).unwrap();
    let lines: Vec<&str> = jobs.lines().collect();
    assert_eq!(lines.len(), 201);
    assert_eq!(lines[0].split(',').count(), 17);
    assert!(
        lines[1].starts_with(
            "1,w0,delay,0.000000,1,1000.000000,1,COMPLETED_SUCCESSFULLY,0.000000,170.000000,"
        ),
        "{}",
        lines[1]
    );
    let gantt = std::fs::read_to_string(a.join("gantt.svg")).unwrap();
    // One bar per job.
    assert_eq!(gantt.matches("<title>w0 ").count(), 200);
    let report = std::fs::read_to_string(a.join("report.html")).unwrap();
    assert!(
        !report.contains("<script") && !report.contains("src=\"http"),
        "self-contained"
    );
    // Same inputs, same seed: the same bytes, in every output file.
    simulate(&args, &b);
    for f in ["jobs.csv", "schedule.csv", "gantt.svg", "report.html"] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f} differs between runs"
        );
    }
}

#[test]
fn batsim_delays_and_swf_trace() {
    // Batsim's test_delays: 10 one-cpu jobs of 10 s, one every 3 s, so at
    // most four overlap; two 2-cpu nodes hold four, and nobody waits.
    let dir = out_dir("delays");
    let wl = testdata("workloads/batsim/test_delays.json");
    simulate(
        &[
            "--workload",
            wl.to_str().unwrap(),
            "--nodes",
            "2",
            "--node-cpu",
            "2",
        ],
        &dir,
    );
    let s = schedule(&dir);
    assert_eq!(get(&s, "nb_jobs"), 10.0);
    assert_eq!(get(&s, "nb_jobs_success"), 10.0);
    assert_eq!(get(&s, "max_waiting_time"), 0.0);

    // The KIT trace on one 6-core node, processors capped at 6.
    let dir = out_dir("swf");
    let swf = testdata("workloads/batkube/KIT-10-80.swf");
    let printed = simulate(
        &[
            "--workload",
            swf.to_str().unwrap(),
            "--nodes",
            "1",
            "--node-cpu",
            "6",
            "--swf-max-procs",
            "6",
            "--node-memory",
            "64Gi",
        ],
        &dir,
    );
    assert!(printed.contains("39 jobs"), "{printed}");
    let s = schedule(&dir);
    assert_eq!(get(&s, "nb_jobs_finished"), 39.0);
}

/// Runs `kubesim simulate` expecting failure; its stderr.
fn simulate_fails(args: &[&str]) -> String {
    let out = out_dir("bad");
    let o = Command::new(env!("CARGO_BIN_EXE_kubesim"))
        .arg("simulate")
        .args(args)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(!o.status.success(), "simulate {args:?} should fail");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn bad_inputs_get_one_clear_line() {
    let err = simulate_fails(&["--workload", "/nonexistent.json", "--nodes", "1"]);
    assert!(err.contains("cannot read /nonexistent.json"), "{err}");
    let wl = testdata("workloads/batsim/test_delays.json");
    let wl = wl.to_str().unwrap();
    let err = simulate_fails(&["--workload", wl, "--nodes", "1", "--node-cpu", "lots"]);
    assert!(err.contains("lots"), "{err}");
    let err = simulate_fails(&["--workload", wl]);
    assert!(err.contains("--cluster FILE or --nodes N"), "{err}");
}

fn synth(args: &[&str], out: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_kubesim"))
        .args(["workload", "synth"])
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "kubesim workload synth failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn synthetic_workloads_are_deterministic_end_to_end() {
    // Two members of the family: light load of short narrow jobs, and a
    // saturating burst of long wide ones, each made and run twice.
    let members: [&[&str]; 2] = [
        &[
            "--jobs",
            "150",
            "--load",
            "0.3",
            "--run-time",
            "uniform:10,120",
            "--size",
            "fixed:1",
        ],
        &[
            "--jobs",
            "150",
            "--arrival",
            "burst",
            "--run-time",
            "lognormal:3600,1",
            "--size",
            "pow2:1,8",
        ],
    ];
    for (i, member) in members.iter().enumerate() {
        let cluster = ["--nodes", "10", "--node-cpu", "8"];
        let dir = out_dir(&format!("synth{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let (wa, wb) = (dir.join("a.json"), dir.join("b.json"));
        let mut args: Vec<&str> = member.to_vec();
        args.extend(cluster);
        args.extend(["--seed", "5"]);
        synth(&args, &wa);
        synth(&args, &wb);
        assert_eq!(std::fs::read(&wa).unwrap(), std::fs::read(&wb).unwrap());
        let run = [
            "--workload",
            wa.to_str().unwrap(),
            "--nodes",
            "10",
            "--node-cpu",
            "8",
            "--node-memory",
            "32Gi",
        ];
        let (a, b) = (dir.join("out-a"), dir.join("out-b"));
        simulate(&run, &a);
        simulate(&run, &b);
        for f in ["jobs.csv", "schedule.csv", "gantt.svg", "report.html"] {
            assert_eq!(
                std::fs::read(a.join(f)).unwrap(),
                std::fs::read(b.join(f)).unwrap(),
                "member {i}: {f} differs between runs"
            );
        }
        let s = schedule(&a);
        let finished = s.iter().find(|(k, _)| k == "nb_jobs_finished").unwrap();
        assert_eq!(finished.1, "150", "member {i}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
