//! What a Batsim profile does, before it is placed: waits, and parallel
//! tasks whose time depends on the hosts they run on.
//!
//! On a platform whose compute hosts are alike (one speed, one
//! `<cluster>`), every placement takes the same time and the reader
//! fixes it ([`super::batsim`]). On any other platform a job's time is
//! decided when its pods are placed: [`Work::time_on`] the hosts they
//! were bound to, with part `k` of each task on the job's `k`-th host.

use crate::routes::Platform;

/// One step of a profile.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    /// Seconds, wherever it runs.
    Delay(f64),
    /// A parallel task of profile type `kind`: flops per part, and bytes
    /// from part to part (`n` by `n`, row: sender; empty: none).
    Task {
        kind: String,
        cpu: Vec<f64>,
        com: Vec<f64>,
    },
    /// Steps run one after the other, so many times.
    Repeat(u64, Vec<Phase>),
}

impl Phase {
    /// The number of parts of the task, 0 for a delay.
    fn parts(&self) -> usize {
        match self {
            Phase::Delay(_) => 0,
            Phase::Task { cpu, com, .. } => cpu.len().max(side(com)),
            Phase::Repeat(_, steps) => steps.iter().map(Phase::parts).max().unwrap_or(0),
        }
    }

    /// Whether some task sends bytes between two parts.
    fn communicates(&self) -> bool {
        match self {
            Phase::Delay(_) => false,
            Phase::Task { com, .. } => com.iter().any(|b| *b > 0.0),
            Phase::Repeat(_, steps) => steps.iter().any(Phase::communicates),
        }
    }

    fn time_on(&self, hosts: &[&str], platform: &Platform) -> Option<f64> {
        match self {
            Phase::Delay(s) => Some(*s),
            Phase::Task { cpu, com, .. } => platform.task_time(hosts, cpu, com),
            Phase::Repeat(times, steps) => {
                let mut once = 0.0;
                for s in steps {
                    once += s.time_on(hosts, platform)?;
                }
                Some(once * *times as f64)
            }
        }
    }
}

/// The side of a square matrix of `len` values.
fn side(com: &[f64]) -> usize {
    (com.len() as f64).sqrt().round() as usize
}

/// A job's steps, timed once it is placed.
#[derive(Debug, Clone, PartialEq)]
pub struct Work {
    pub steps: Vec<Phase>,
}

impl Work {
    /// Why the job, on `hosts` hosts of `platform`, could not be timed
    /// wherever it is placed; None when it can.
    pub fn untimeable(&self, hosts: u32, platform: &Platform) -> Option<String> {
        if let Some(h) = platform.unspeeded().first() {
            return Some(format!("compute host {h} has no speed"));
        }
        let parts = self.steps.iter().map(Phase::parts).max().unwrap_or(0);
        if parts > 1 && parts != hosts as usize {
            return Some(format!(
                "a task of {parts} parts on {hosts} host(s); on hosts of different kinds each part needs a host of its own"
            ));
        }
        if self.steps.iter().any(Phase::communicates) && !platform.routes_every_pair() {
            return Some("with communication; the platform does not route between every pair of compute hosts".into());
        }
        None
    }

    /// The seconds the job runs with part `k` of each task on `hosts[k]`;
    /// None when a host's speed or a route is unknown.
    pub fn time_on(&self, hosts: &[&str], platform: &Platform) -> Option<f64> {
        let mut t = 0.0;
        for s in &self.steps {
            t += s.time_on(hosts, platform)?;
        }
        Some(t).filter(|t: &f64| t.is_finite() && *t >= 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sequence_times_each_step_on_the_hosts_it_got() {
        let xml = r#"<platform version="4.1"><zone id="z" routing="Full">
            <host id="fast" speed="2Mf"/><host id="slow" speed="1Mf"/>
            <link id="l" bandwidth="1MBps" latency="1ms"/>
            <route src="fast" dst="slow"><link_ctn id="l"/></route>
            </zone></platform>"#;
        let p = Platform::from_xml(xml, &["fast".into(), "slow".into()]).unwrap();
        // (4 Mflop on each part, then 1 MB from part 0 to 1, then 1 s)
        // twice: 4 s on the slow host, 1.001 s of transfer, 1 s.
        let work = Work {
            steps: vec![Phase::Repeat(
                2,
                vec![
                    Phase::Task {
                        kind: "parallel".into(),
                        cpu: vec![4e6, 4e6],
                        com: vec![],
                    },
                    Phase::Task {
                        kind: "parallel".into(),
                        cpu: vec![],
                        com: vec![0.0, 1e6, 0.0, 0.0],
                    },
                    Phase::Delay(1.0),
                ],
            )],
        };
        assert_eq!(work.untimeable(2, &p), None);
        assert!(work.untimeable(3, &p).unwrap().contains("2 parts on 3"));
        let t = work.time_on(&["fast", "slow"], &p).unwrap();
        assert!((t - 2.0 * (4.0 + 1.001 + 1.0)).abs() < 1e-9, "{t}");
        // One part alone on the fast host: 2 s.
        let one = Work {
            steps: vec![Phase::Task {
                kind: "parallel".into(),
                cpu: vec![4e6],
                com: vec![],
            }],
        };
        assert_eq!(one.time_on(&["fast"], &p), Some(2.0));
        assert_eq!(one.time_on(&["nowhere"], &p), None);
    }
}
