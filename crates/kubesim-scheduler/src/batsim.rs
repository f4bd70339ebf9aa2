//! Batsim's reference batch policies as scheduler plugins: `BatsimFCFS`
//! and `BatsimEASYBackfilling`.
//!
//! Both see the pending pods of their profile as jobs (a PodGroup's
//! members together, any other pod alone) in submission order: the
//! `kubesim.io/submit-order` label (an integer; pods without it come
//! after those with it), then the creation time, then the name.
//!
//! - FCFS starts jobs in that order while they fit; the first job that
//!   does not fit blocks every job behind it.
//! - EASY backfilling does the same until the first job that does not fit
//!   (the head). The head gets a reservation: the earliest time at which
//!   it would fit if each running pod ended at its start plus its
//!   requested time (the `kubesim.io/walltime` label, a Go duration such
//!   as `3600s`; a pod without it is taken never to end). A later job
//!   that fits now starts only if it does not delay that reservation: it
//!   ends (by its own requested time) no later than the reservation, or
//!   the head still fits at the reservation with the later job still
//!   running.
//!
//! Plans use requested times, as Batsim's schedulers do; jobs run for
//! their real time (at most their requested time), and every instant
//! with events (jobs end, jobs arrive) plans again from what is running
//! and waiting then; in a simulation, once all of the instant's events
//! have happened ([`kubesim_runtime::Clock::settled`]). A job "fits" when every member is placed by the
//! profile's Filter and Score plugins, one after another on one snapshot
//! ([`crate::coscheduling::place`]); on identical hosts with one pod per
//! host this is counting free hosts.

use std::cmp::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::algorithm::Algorithm;
use crate::config::ProfileConfig;
use crate::coscheduling::place::{self, Fitted};
use crate::framework::{PodInfo, Snapshot};
use crate::profile::Profile;
use crate::queue::Nominated;

/// The FCFS plugin's name in a KubeSchedulerConfiguration.
pub const FCFS: &str = "BatsimFCFS";
/// The EASY backfilling plugin's name.
pub const EASY: &str = "BatsimEASYBackfilling";
/// The label giving a pod's position in submission order.
pub const SUBMIT_ORDER: &str = "kubesim.io/submit-order";
/// The label giving a pod's requested time (Batsim's `walltime`).
pub const WALLTIME: &str = "kubesim.io/walltime";

/// Which batch policy a profile runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Fcfs,
    Easy,
}

impl Policy {
    /// The policy `cfg` enables, if any; an error when it enables both.
    pub fn of(cfg: &ProfileConfig) -> Result<Option<Policy>, String> {
        match (cfg.enables(FCFS), cfg.enables(EASY)) {
            (true, true) => Err(format!(
                "profile {} enables both {FCFS} and {EASY}; enable one",
                cfg.scheduler_name
            )),
            (true, false) => Ok(Some(Policy::Fcfs)),
            (false, true) => Ok(Some(Policy::Easy)),
            (false, false) => Ok(None),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Policy::Fcfs => FCFS,
            Policy::Easy => EASY,
        }
    }
}

/// A Go duration (`1h2m3.5s`, `1500ms`), as the walltime label holds it.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if s == "0" {
        return Some(Duration::ZERO);
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += value * scale;
    }
    Duration::try_from_secs_f64(total).ok()
}

/// The pod's requested time, if it states one.
pub fn walltime(pod: &PodInfo) -> Option<Duration> {
    pod.labels.get(WALLTIME).and_then(|v| parse_duration(v))
}

/// The key ordering pods by submission.
pub fn submit_key(pod: &PodInfo) -> (u64, String, String) {
    let order = pod
        .labels
        .get(SUBMIT_ORDER)
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(u64::MAX);
    let created = pod.pod.creation_timestamp.to_string();
    (order, created, pod.name().to_string())
}

/// A waiting job: its pods, how many of them must be placed for it to
/// start, and its requested time.
pub struct Job {
    pub pods: Vec<Arc<PodInfo>>,
    pub need: usize,
    pub walltime: Option<Duration>,
}

impl Job {
    pub fn new(pods: Vec<Arc<PodInfo>>, need: usize) -> Job {
        // A job's requested time is its longest member's.
        let walltime = pods
            .iter()
            .map(|p| walltime(p))
            .try_fold(Duration::ZERO, |acc, w| w.map(|w| acc.max(w)));
        Job {
            pods,
            need,
            walltime,
        }
    }

    pub fn key(&self) -> (u64, String, String) {
        self.pods.iter().map(|p| submit_key(p)).min().unwrap_or((
            u64::MAX,
            String::new(),
            String::new(),
        ))
    }
}

/// What a job is told when it waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wait {
    /// It does not fit now (the head of the queue); kube-scheduler's
    /// message for its first member that did not fit.
    NoFit(String),
    /// A job submitted before it waits (FCFS).
    Behind,
    /// Starting it would delay the head's reservation (EASY).
    WouldDelay,
}

/// The decision of one planning cycle: which jobs start where, which
/// wait and why, and the head's reservation (seconds from now; None when
/// no job waits behind an unfitting head or it could never be computed).
pub struct Plan {
    pub start: Vec<(usize, Vec<Fitted>)>,
    pub wait: Vec<(usize, Wait)>,
    pub reservation: Option<f64>,
}

/// An upper bound on how many pods like `pod` the snapshot's nodes could
/// still take by resources alone; cheaper than placing them, and used to
/// pass over jobs that cannot fit.
fn room_for(snap: &Snapshot, pod: &PodInfo) -> usize {
    let r = &pod.requests;
    snap.nodes
        .iter()
        .map(|n| {
            let mut k = usize::MAX;
            let mut limit = |free: i64, want: i64| {
                if want > 0 {
                    k = k.min((free.max(0) / want) as usize);
                }
            };
            limit(n.allocatable.milli_cpu - n.requested.milli_cpu, r.milli_cpu);
            limit(n.allocatable.memory - n.requested.memory, r.memory);
            if n.allocatable.pods > 0 {
                limit(n.allocatable.pods - n.requested.pods, 1);
            }
            k
        })
        .fold(0usize, |a, k| a.saturating_add(k))
}

/// Places `job` on `snap`; the members placed when at least `need` fit.
fn try_place(
    algo: &mut Algorithm,
    profile: &Profile,
    job: &Job,
    snap: &Snapshot,
    nominated: &Nominated,
) -> Result<Vec<Fitted>, String> {
    // Members of one job are alike (one pod per host): if the first
    // cannot be counted `need` times by resources, none is placed.
    if let Some(first) = job.pods.first() {
        if job.pods.iter().all(|p| p.requests == first.requests) && room_for(snap, first) < job.need
        {
            return Err(format!(
                "0/{} nodes are available: not enough room for the job's {} pods.",
                snap.nodes.len(),
                job.need
            ));
        }
    }
    let out = place::place(algo, profile, &job.pods, snap, nominated);
    if out.fitted.len() >= job.need.max(1) {
        Ok(out.fitted)
    } else {
        Err(out
            .unfit
            .first()
            .map(|u| u.message.clone())
            .unwrap_or_default())
    }
}

/// Counts `fitted` on their nodes in `snap`.
fn commit(snap: &mut Snapshot, fitted: &[Fitted]) {
    for f in fitted {
        if let Some(&i) = snap.index.get(&f.node) {
            let mut node = (*snap.nodes[i]).clone();
            node.add_pod(Arc::new(f.pod.placed_on(&f.node)));
            snap.set_node(i, Arc::new(node));
        }
    }
}

/// Takes the pods with `uids` off their nodes in `snap`.
fn release(snap: &mut Snapshot, gone: &[(String, String)]) {
    for (node, uid) in gone {
        if let Some(&i) = snap.index.get(node) {
            let mut n = (*snap.nodes[i]).clone();
            if n.remove_pod(uid) {
                snap.set_node(i, Arc::new(n));
            }
        }
    }
}

/// When a running pod is expected to end: seconds from now, by node and
/// uid.
pub type Ends = Vec<(f64, String, String)>;

/// The earliest time (seconds from now) at which `head` fits once the
/// pods of `ends` that end by then are gone, with the snapshot at that
/// time (without the head). None if it fits at no such time.
fn reserve(
    algo: &mut Algorithm,
    profile: &Profile,
    head: &Job,
    snap: &Snapshot,
    ends: &Ends,
    nominated: &Nominated,
) -> Option<(f64, Snapshot)> {
    let mut sorted = ends.clone();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let mut later = snap.clone();
    let mut i = 0;
    while i < sorted.len() {
        let t = sorted[i].0;
        let mut gone = Vec::new();
        while i < sorted.len() && sorted[i].0.total_cmp(&t) != Ordering::Greater {
            gone.push((sorted[i].1.clone(), sorted[i].2.clone()));
            i += 1;
        }
        release(&mut later, &gone);
        if try_place(algo, profile, head, &later, nominated).is_ok() {
            return Some((t.max(0.0), later));
        }
    }
    None
}

/// One planning cycle over `jobs` (in submission order) on `snapshot`,
/// where the running pods end as `ends` says.
pub fn plan(
    policy: Policy,
    algo: &mut Algorithm,
    profile: &Profile,
    jobs: &[Job],
    snapshot: &Snapshot,
    ends: &Ends,
    nominated: &Nominated,
) -> Plan {
    let mut snap = snapshot.clone();
    let mut ends = ends.clone();
    let mut plan = Plan {
        start: Vec::new(),
        wait: Vec::new(),
        reservation: None,
    };
    // The head's reservation once one job has not fitted: its time and
    // the cluster then, or None when it cannot be computed.
    let mut head: Option<(usize, Option<(f64, Snapshot)>)> = None;
    for (i, job) in jobs.iter().enumerate() {
        let Some((h, reservation)) = &mut head else {
            match try_place(algo, profile, job, &snap, nominated) {
                Ok(fitted) => {
                    commit(&mut snap, &fitted);
                    if let Some(w) = job.walltime {
                        for f in &fitted {
                            ends.push((w.as_secs_f64(), f.node.clone(), f.pod.uid.clone()));
                        }
                    }
                    plan.start.push((i, fitted));
                }
                Err(message) => {
                    plan.wait.push((i, Wait::NoFit(message)));
                    let r = match policy {
                        Policy::Fcfs => None,
                        Policy::Easy => reserve(algo, profile, job, &snap, &ends, nominated),
                    };
                    plan.reservation = r.as_ref().map(|(t, _)| *t);
                    head = Some((i, r));
                }
            }
            continue;
        };
        if policy == Policy::Fcfs {
            plan.wait.push((i, Wait::Behind));
            continue;
        }
        let fitted = match try_place(algo, profile, job, &snap, nominated) {
            Ok(f) => f,
            Err(message) => {
                plan.wait.push((i, Wait::NoFit(message)));
                continue;
            }
        };
        let allowed = match reservation {
            // The head fits at no time computed from requested times:
            // nothing a later job does can delay it by those.
            None => true,
            Some((t, later)) => {
                if job.walltime.is_some_and(|w| w.as_secs_f64() <= *t) {
                    true
                } else {
                    // Still running at the reservation: the head must fit
                    // beside it then.
                    let mut with = later.clone();
                    commit(&mut with, &fitted);
                    let head_job = &jobs[*h];
                    if try_place(algo, profile, head_job, &with, nominated).is_ok() {
                        *later = with;
                        true
                    } else {
                        false
                    }
                }
            }
        };
        if allowed {
            commit(&mut snap, &fitted);
            plan.start.push((i, fitted));
        } else {
            plan.wait.push((i, Wait::WouldDelay));
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProfileConfig;
    use crate::framework::NodeInfo;
    use kubesim_runtime::Rng;
    use serde_json::json;

    fn node(name: &str) -> Arc<NodeInfo> {
        Arc::new(NodeInfo::from_node(Arc::new(json!({
            "metadata": {"name": name, "uid": name},
            "status": {"allocatable": {"cpu": "1", "memory": "4Gi", "pods": "110"}},
        }))))
    }

    fn snapshot(n: usize) -> Snapshot {
        let mut s = Snapshot::default();
        for i in 0..n {
            let name = format!("n{i}");
            s.index.insert(name.clone(), i);
            s.nodes.push(node(&name));
        }
        s
    }

    fn pod(name: &str, order: u64, walltime: &str) -> Arc<PodInfo> {
        Arc::new(PodInfo::from_pod(Arc::new(json!({
            "metadata": {"name": name, "namespace": "default", "uid": name,
                "labels": {SUBMIT_ORDER: order.to_string(), WALLTIME: walltime}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        }))))
    }

    /// A job of `hosts` whole-host pods.
    fn job(name: &str, order: u64, hosts: usize, walltime: &str) -> Job {
        let pods = (0..hosts)
            .map(|k| pod(&format!("{name}-{k}"), order, walltime))
            .collect();
        Job::new(pods, hosts)
    }

    /// `name` already running on the first `hosts` free nodes of `snap`,
    /// ending `ends_in` seconds from now.
    fn running(snap: &mut Snapshot, ends: &mut Ends, name: &str, hosts: usize, ends_in: f64) {
        let mut placed = 0;
        for i in 0..snap.nodes.len() {
            if placed == hosts {
                break;
            }
            if snap.nodes[i].pods.is_empty() {
                let p = pod(&format!("{name}-{placed}"), 0, "1s");
                let mut n = (*snap.nodes[i]).clone();
                ends.push((ends_in, n.name.clone(), p.uid.clone()));
                n.add_pod(Arc::new(p.placed_on(&n.name.clone())));
                snap.set_node(i, Arc::new(n));
                placed += 1;
            }
        }
    }

    fn run(policy: Policy, jobs: &[Job], snap: &Snapshot, ends: &Ends) -> Plan {
        let profile = Profile::build(&ProfileConfig::default_named("default-scheduler")).unwrap();
        let mut algo = Algorithm::new(Rng::seeded(1), Some(100));
        plan(
            policy,
            &mut algo,
            &profile,
            jobs,
            snap,
            ends,
            &Nominated::default(),
        )
    }

    fn started(p: &Plan) -> Vec<usize> {
        p.start.iter().map(|(i, _)| *i).collect()
    }

    #[test]
    fn durations_as_go_writes_them() {
        assert_eq!(parse_duration("1500ms"), Some(Duration::from_millis(1500)));
        assert_eq!(
            parse_duration("1h2m3.5s"),
            Some(Duration::from_secs_f64(3723.5))
        );
        assert_eq!(parse_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_duration("10"), None);
        assert_eq!(parse_duration("x"), None);
    }

    #[test]
    fn a_profile_runs_one_policy() {
        let mut cfg = ProfileConfig::default_named("p");
        assert_eq!(Policy::of(&cfg), Ok(None));
        cfg.multi_point.enabled.push((FCFS.into(), None));
        assert_eq!(Policy::of(&cfg), Ok(Some(Policy::Fcfs)));
        cfg.multi_point.enabled.push((EASY.into(), None));
        assert!(Policy::of(&cfg).unwrap_err().contains("both"));
    }

    // 4 hosts; A (2 hosts) runs and ends in 10 s. Waiting, in order: B
    // (4 hosts, 5 s), C (1 host, 3 s), D (1 host, 20 s).
    fn queue() -> (Snapshot, Ends, Vec<Job>) {
        let mut snap = snapshot(4);
        let mut ends = Ends::new();
        running(&mut snap, &mut ends, "a", 2, 10.0);
        let jobs = vec![
            job("b", 1, 4, "5s"),
            job("c", 2, 1, "3s"),
            job("d", 3, 1, "20s"),
        ];
        (snap, ends, jobs)
    }

    #[test]
    fn fcfs_blocks_behind_the_head() {
        let (snap, ends, jobs) = queue();
        let p = run(Policy::Fcfs, &jobs, &snap, &ends);
        assert!(started(&p).is_empty());
        assert!(matches!(p.wait[0], (0, Wait::NoFit(_))));
        assert_eq!(p.wait[1], (1, Wait::Behind));
        assert_eq!(p.wait[2], (2, Wait::Behind));
    }

    #[test]
    fn easy_backfills_only_what_ends_before_the_reservation() {
        let (snap, ends, jobs) = queue();
        let p = run(Policy::Easy, &jobs, &snap, &ends);
        // B fits once A is gone, at 10 s. C (3 s) ends before; D (20 s)
        // would hold a host B needs.
        assert_eq!(p.reservation, Some(10.0));
        assert_eq!(started(&p), [1]);
        assert_eq!(p.wait[1], (2, Wait::WouldDelay));
    }

    #[test]
    fn easy_backfills_a_long_job_on_hosts_the_head_does_not_need() {
        // 5 hosts; A (2 hosts) ends in 10 s.
        let mut snap = snapshot(5);
        let mut ends = Ends::new();
        running(&mut snap, &mut ends, "a", 2, 10.0);
        let jobs = vec![
            job("b", 1, 2, "100s"),
            job("e", 2, 3, "5s"),
            job("f", 3, 1, "50s"),
            job("g", 4, 1, "50s"),
        ];
        let p = run(Policy::Easy, &jobs, &snap, &ends);
        // B takes 2 of the 3 free hosts; E waits for A (10 s) and needs
        // 3: A's 2 and the one left. F (50 s) would hold that one: waits.
        assert_eq!(started(&p), [0]);
        assert_eq!(p.reservation, Some(10.0));
        assert_eq!(p.wait[1], (2, Wait::WouldDelay));
        // With 6 hosts, one is spare at the reservation: F takes it, and
        // G, which would take the next, waits.
        let mut snap = snapshot(6);
        let mut ends = Ends::new();
        running(&mut snap, &mut ends, "a", 2, 10.0);
        let p = run(Policy::Easy, &jobs, &snap, &ends);
        assert_eq!(started(&p), [0, 2]);
        assert_eq!(p.wait[1], (3, Wait::WouldDelay));
    }

    #[test]
    fn a_running_pod_without_walltime_never_ends_in_the_plan() {
        let mut snap = snapshot(2);
        let mut ends = Ends::new();
        running(&mut snap, &mut ends, "a", 1, 10.0);
        ends.clear();
        let jobs = vec![job("b", 1, 2, "5s"), job("c", 2, 1, "50s")];
        let p = run(Policy::Easy, &jobs, &snap, &ends);
        assert_eq!(p.reservation, None);
        assert_eq!(started(&p), [1]);
    }
}
