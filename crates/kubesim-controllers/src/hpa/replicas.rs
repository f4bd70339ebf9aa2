//! How many replicas one resource metric asks for, following the
//! documented autoscaling rule: desired = ceil(current ready pods ×
//! current/target), left alone within the tolerance, with pods that have no
//! metrics (or are not ready) filled in so that they dampen the change.

use std::collections::BTreeMap;

/// What the calculation needs to know about one pod of the target.
#[derive(Debug, Clone, PartialEq)]
pub struct PodSample {
    pub name: String,
    /// Pending, or (for cpu) not Ready: its usage does not represent load.
    pub unready: bool,
    /// Being deleted or finished: left out altogether.
    pub ignored: bool,
    /// Sum of the containers' requests, in milli-units; None when a
    /// container has none.
    pub request: Option<i64>,
    /// Sum of the containers' usage from its PodMetrics, in milli-units.
    pub usage: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// Percent of the pods' requests.
    Utilization(i64),
    /// Per-pod average, in milli-units.
    AverageValue(i64),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub replicas: i64,
    /// Current utilization in percent (Utilization targets only).
    pub utilization: Option<i64>,
    /// Current per-pod average usage in milli-units.
    pub average: i64,
}

/// (ratio to target, utilization percent, average usage) over `usage`.
fn ratio(
    usage: &BTreeMap<String, i64>,
    requests: &BTreeMap<String, i64>,
    target: Target,
) -> Result<(f64, Option<i64>, i64), String> {
    if usage.is_empty() {
        return Err("did not receive metrics for targeted pods (pods might be unready)".into());
    }
    let total: i128 = usage.values().map(|v| i128::from(*v)).sum();
    let average = (total / usage.len() as i128) as i64;
    match target {
        Target::Utilization(t) => {
            let mut req: i128 = 0;
            for name in usage.keys() {
                match requests.get(name) {
                    Some(r) => req += i128::from(*r),
                    None => return Err(format!("missing request for pod {name}")),
                }
            }
            if req <= 0 || t <= 0 {
                return Err("no resource requests or no target to compare with".into());
            }
            // Integer percent first, as upstream rounds it.
            let util = (total * 100 / req) as i64;
            Ok((util as f64 / t as f64, Some(util), average))
        }
        Target::AverageValue(t) => {
            if t <= 0 {
                return Err("the target average value must be positive".into());
            }
            Ok((average as f64 / t as f64, None, average))
        }
    }
}

/// The replica count one resource metric proposes for a target currently
/// at `current` replicas.
pub fn proposal(
    current: i64,
    pods: &[PodSample],
    target: Target,
    tolerance: f64,
) -> Result<Proposal, String> {
    if pods.is_empty() {
        return Err("no pods returned by selector while calculating replica count".into());
    }
    let mut usage = BTreeMap::new();
    let mut requests = BTreeMap::new();
    let mut missing = Vec::new();
    let mut unready = Vec::new();
    for p in pods.iter().filter(|p| !p.ignored) {
        if let Some(r) = p.request {
            requests.insert(p.name.clone(), r);
        } else if matches!(target, Target::Utilization(_)) {
            return Err(format!("missing request for pod {}", p.name));
        }
        if p.unready {
            unready.push(p.name.clone());
        } else {
            match p.usage {
                Some(u) => {
                    usage.insert(p.name.clone(), u);
                }
                None => missing.push(p.name.clone()),
            }
        }
    }
    let ready = usage.len() as i64;
    let (r, utilization, average) = ratio(&usage, &requests, target)?;
    let scale_up_with_unready = !unready.is_empty() && r > 1.0;
    if !scale_up_with_unready && missing.is_empty() {
        if (1.0 - r).abs() <= tolerance {
            return Ok(Proposal {
                replicas: current,
                utilization,
                average,
            });
        }
        return Ok(Proposal {
            replicas: (r * ready as f64).ceil() as i64,
            utilization,
            average,
        });
    }
    // Fill in the unknowns so they pull against the direction of change:
    // missing pods count as fully loaded (at least the target) on the way
    // down and idle on the way up; unready pods count as idle on the way up.
    let mut filled = usage.clone();
    if r < 1.0 {
        for name in &missing {
            let v = match target {
                Target::Utilization(t) => {
                    requests.get(name).copied().unwrap_or(0) * t.max(100) / 100
                }
                Target::AverageValue(t) => t,
            };
            filled.insert(name.clone(), v);
        }
    } else if r > 1.0 {
        for name in &missing {
            filled.insert(name.clone(), 0);
        }
    }
    if scale_up_with_unready {
        for name in &unready {
            filled.insert(name.clone(), 0);
        }
    }
    let (nr, _, _) = ratio(&filled, &requests, target)?;
    let flips = (r < 1.0 && nr > 1.0) || (r > 1.0 && nr < 1.0);
    if (1.0 - nr).abs() <= tolerance || flips {
        return Ok(Proposal {
            replicas: current,
            utilization,
            average,
        });
    }
    let replicas = (nr * filled.len() as f64).ceil() as i64;
    if (nr < 1.0 && replicas > current) || (nr > 1.0 && replicas < current) {
        return Ok(Proposal {
            replicas: current,
            utilization,
            average,
        });
    }
    Ok(Proposal {
        replicas,
        utilization,
        average,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, request: i64, usage: Option<i64>) -> PodSample {
        PodSample {
            name: name.into(),
            unready: false,
            ignored: false,
            request: Some(request),
            usage,
        }
    }

    const TOL: f64 = 0.1;

    #[test]
    fn scales_by_ratio_of_utilization() {
        // Two pods requesting 500m using 400m each: 80 % against 50 %,
        // ratio 1.6, ceil(1.6 × 2) = 4.
        let pods = [pod("a", 500, Some(400)), pod("b", 500, Some(400))];
        let p = proposal(2, &pods, Target::Utilization(50), TOL).unwrap();
        assert_eq!((p.replicas, p.utilization, p.average), (4, Some(80), 400));
        // 100m each = 20 %: ratio 0.4, ceil(0.4 × 2) = 1.
        let pods = [pod("a", 500, Some(100)), pod("b", 500, Some(100))];
        assert_eq!(
            proposal(2, &pods, Target::Utilization(50), TOL)
                .unwrap()
                .replicas,
            1
        );
    }

    #[test]
    fn tolerance_keeps_the_count() {
        // 54 % against 50 %: ratio 1.08, within 0.1 of 1.
        let pods = [pod("a", 1000, Some(540)), pod("b", 1000, Some(540))];
        assert_eq!(
            proposal(2, &pods, Target::Utilization(50), TOL)
                .unwrap()
                .replicas,
            2
        );
        // 56 %: ratio 1.12, outside: ceil(1.12 × 2) = 3.
        let pods = [pod("a", 1000, Some(560)), pod("b", 1000, Some(560))];
        assert_eq!(
            proposal(2, &pods, Target::Utilization(50), TOL)
                .unwrap()
                .replicas,
            3
        );
    }

    #[test]
    fn missing_metrics_dampen_both_ways() {
        // Scale up: a, b at 100 % (ratio 2), c without metrics counts as
        // 0: (1000+1000+0)/3000 = 66 %, ratio 1.32, ceil(1.32 × 3) = 4
        // rather than the 6 the two measured pods alone would give.
        let pods = [
            pod("a", 1000, Some(1000)),
            pod("b", 1000, Some(1000)),
            pod("c", 1000, None),
        ];
        assert_eq!(
            proposal(3, &pods, Target::Utilization(50), TOL)
                .unwrap()
                .replicas,
            4
        );
        // Scale down: a, b at 10 % (ratio 0.2), c counted at 100 %:
        // (100+100+1000)/3000 = 40 %, ratio 0.8, ceil(0.8 × 3) = 3: no
        // change, since that is not below the current 3.
        let pods = [
            pod("a", 1000, Some(100)),
            pod("b", 1000, Some(100)),
            pod("c", 1000, None),
        ];
        assert_eq!(
            proposal(3, &pods, Target::Utilization(50), TOL)
                .unwrap()
                .replicas,
            3
        );
    }

    #[test]
    fn unready_pods_count_as_idle_on_scale_up() {
        // a at 100 % of request (ratio 2 against 50 %); b unready counts
        // as 0: 1000/2000 = 50 %, ratio 1.0 within tolerance: stay at 2.
        let mut b = pod("b", 1000, Some(900));
        b.unready = true;
        let pods = [pod("a", 1000, Some(1000)), b];
        assert_eq!(
            proposal(2, &pods, Target::Utilization(50), TOL)
                .unwrap()
                .replicas,
            2
        );
    }

    #[test]
    fn average_value_targets() {
        // Average 300m against 100m: ratio 3, ceil(3 × 2) = 6.
        let pods = [pod("a", 0, Some(200)), pod("b", 0, Some(400))];
        let p = proposal(2, &pods, Target::AverageValue(100), TOL).unwrap();
        assert_eq!((p.replicas, p.utilization, p.average), (6, None, 300));
    }

    #[test]
    fn errors_without_metrics_or_requests() {
        assert!(proposal(1, &[pod("a", 100, None)], Target::Utilization(50), TOL).is_err());
        let mut p = pod("a", 0, Some(1));
        p.request = None;
        assert!(proposal(1, &[p], Target::Utilization(50), TOL).is_err());
        assert!(proposal(1, &[], Target::Utilization(50), TOL).is_err());
    }
}
