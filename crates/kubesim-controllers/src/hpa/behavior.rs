//! `spec.behavior`: stabilization windows and scaling rate policies, with
//! autoscaling/v2's defaults when a direction is not configured (scale up
//! by the larger of 4 pods or 100 % per 15 s with no stabilization; scale
//! down by up to 100 % per 15 s after a 300 s stabilization window).

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Select {
    Max,
    Min,
    Disabled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind {
    Pods,
    Percent,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    pub window_seconds: i64,
    pub select: Select,
    /// (kind, value, periodSeconds)
    pub policies: Vec<(PolicyKind, i64, i64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Behavior {
    pub up: Rules,
    pub down: Rules,
}

fn default_up() -> Rules {
    Rules {
        window_seconds: 0,
        select: Select::Max,
        policies: vec![(PolicyKind::Percent, 100, 15), (PolicyKind::Pods, 4, 15)],
    }
}

fn default_down() -> Rules {
    Rules {
        window_seconds: 300,
        select: Select::Max,
        policies: vec![(PolicyKind::Percent, 100, 15)],
    }
}

fn rules(v: Option<&Value>, default: Rules) -> Rules {
    let Some(v) = v else { return default };
    let window_seconds = v
        .get("stabilizationWindowSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(default.window_seconds);
    let select = match v.get("selectPolicy").and_then(Value::as_str) {
        Some("Min") => Select::Min,
        Some("Disabled") => Select::Disabled,
        _ => Select::Max,
    };
    let policies: Vec<(PolicyKind, i64, i64)> = v
        .get("policies")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter_map(|p| {
                    let kind = match p.get("type").and_then(Value::as_str)? {
                        "Pods" => PolicyKind::Pods,
                        "Percent" => PolicyKind::Percent,
                        _ => return None,
                    };
                    Some((
                        kind,
                        p.get("value").and_then(Value::as_i64)?,
                        p.get("periodSeconds").and_then(Value::as_i64)?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    Rules {
        window_seconds,
        select,
        policies: if policies.is_empty() {
            default.policies
        } else {
            policies
        },
    }
}

impl Behavior {
    pub fn from_spec(spec: &Value) -> Self {
        let b = spec.get("behavior");
        Behavior {
            up: rules(b.and_then(|b| b.get("scaleUp")), default_up()),
            down: rules(b.and_then(|b| b.get("scaleDown")), default_down()),
        }
    }

    /// The longest time any window or period looks back, in seconds.
    pub fn horizon(&self) -> i64 {
        [&self.up, &self.down]
            .iter()
            .flat_map(|r| std::iter::once(r.window_seconds).chain(r.policies.iter().map(|p| p.2)))
            .max()
            .unwrap_or(0)
    }
}

/// A past recommendation or scale change.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub at: Timestamp,
    pub value: i64,
}

fn within(at: Timestamp, now: Timestamp, seconds: i64) -> bool {
    at > now - SignedDuration::from_secs(seconds)
}

/// Stabilization: scaling up goes no higher than the lowest recommendation
/// of the up window, scaling down no lower than the highest of the down
/// window (`recent` are earlier recommendations, `desired` the new one).
pub fn stabilize(
    now: Timestamp,
    current: i64,
    desired: i64,
    recent: &[Sample],
    b: &Behavior,
) -> i64 {
    let mut up = desired;
    let mut down = desired;
    for r in recent {
        if within(r.at, now, b.up.window_seconds) {
            up = up.min(r.value);
        }
        if within(r.at, now, b.down.window_seconds) {
            down = down.max(r.value);
        }
    }
    current.max(up).min(down)
}

/// Net replicas added (positive) in the last `period` seconds.
fn changed_in(events: &[Sample], now: Timestamp, period: i64) -> i64 {
    events
        .iter()
        .filter(|e| within(e.at, now, period))
        .map(|e| e.value)
        .sum()
}

/// The furthest the count may move from `current` towards `desired` under
/// the rate policies, given the scale `events` (signed replica changes).
fn limit(current: i64, rules: &Rules, events: &[Sample], now: Timestamp, up: bool) -> i64 {
    if rules.select == Select::Disabled {
        return current;
    }
    let mut best: Option<i64> = None;
    for &(kind, value, period) in &rules.policies {
        // What the count was when the period began.
        let start = current - changed_in(events, now, period);
        let proposed = match (kind, up) {
            (PolicyKind::Pods, true) => start + value,
            (PolicyKind::Pods, false) => start - value,
            (PolicyKind::Percent, true) => {
                (start as f64 * (1.0 + value as f64 / 100.0)).ceil() as i64
            }
            (PolicyKind::Percent, false) => (start as f64 * (1.0 - value as f64 / 100.0)) as i64,
        };
        // "Max" picks the policy allowing the largest change.
        let larger_change = |a: i64, b: i64| if up { a.max(b) } else { a.min(b) };
        let smaller_change = |a: i64, b: i64| if up { a.min(b) } else { a.max(b) };
        best = Some(match best {
            None => proposed,
            Some(b) if rules.select == Select::Max => larger_change(b, proposed),
            Some(b) => smaller_change(b, proposed),
        });
    }
    best.unwrap_or(current)
}

/// The outcome of applying rates and bounds: replicas, and the
/// ScalingLimited condition (limited?, reason, message).
#[derive(Debug, Clone, PartialEq)]
pub struct Limited {
    pub replicas: i64,
    pub limited: bool,
    pub reason: &'static str,
    pub message: &'static str,
}

#[allow(clippy::too_many_arguments)]
pub fn apply_rates(
    now: Timestamp,
    current: i64,
    desired: i64,
    min: i64,
    max: i64,
    events: &[Sample],
    b: &Behavior,
) -> Limited {
    let within_range = |replicas| Limited {
        replicas,
        limited: false,
        reason: "DesiredWithinRange",
        message: "the desired count is within the acceptable range",
    };
    if desired > current {
        let rate = limit(current, &b.up, events, now, true);
        let (cap, reason, message) = if max > rate {
            (
                rate,
                "ScaleUpLimit",
                "the desired replica count is increasing faster than the maximum scale rate",
            )
        } else {
            (
                max,
                "TooManyReplicas",
                "the desired replica count is more than the maximum replica count",
            )
        };
        if desired > cap {
            return Limited {
                replicas: cap.max(current.min(max)),
                limited: true,
                reason,
                message,
            };
        }
        within_range(desired)
    } else if desired < current {
        let rate = limit(current, &b.down, events, now, false);
        let (floor, reason, message) = if min > rate {
            (
                min,
                "TooFewReplicas",
                "the desired replica count is less than the minimum replica count",
            )
        } else {
            (
                rate,
                "ScaleDownLimit",
                "the desired replica count is decreasing faster than the maximum scale rate",
            )
        };
        if desired < floor {
            return Limited {
                replicas: floor.min(current.max(min)),
                limited: true,
                reason,
                message,
            };
        }
        within_range(desired)
    } else {
        within_range(desired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_767_225_600 + s).unwrap()
    }

    #[test]
    fn defaults_when_unset() {
        let b = Behavior::from_spec(&json!({}));
        assert_eq!(b.up.window_seconds, 0);
        assert_eq!(b.down.window_seconds, 300);
        assert_eq!(b.horizon(), 300);
    }

    #[test]
    fn default_scale_up_is_max_of_4_pods_or_double() {
        let b = Behavior::from_spec(&json!({}));
        // From 1: 100 % gives 2, 4 pods give 5: the larger, 5.
        assert_eq!(apply_rates(t(0), 1, 20, 1, 100, &[], &b).replicas, 5);
        // From 10: 100 % gives 20, 4 pods give 14: 20.
        let l = apply_rates(t(0), 10, 50, 1, 100, &[], &b);
        assert_eq!((l.replicas, l.reason), (20, "ScaleUpLimit"));
        // Having added 10 in the last 15 s, the period started at 10 again.
        let ev = [Sample {
            at: t(-5),
            value: 10,
        }];
        assert_eq!(apply_rates(t(0), 20, 50, 1, 100, &ev, &b).replicas, 20);
        // Past the period the budget is back: from 20, up to 40.
        assert_eq!(apply_rates(t(20), 20, 50, 1, 100, &ev, &b).replicas, 40);
        // maxReplicas binds first.
        let l = apply_rates(t(0), 10, 50, 1, 12, &[], &b);
        assert_eq!((l.replicas, l.reason), (12, "TooManyReplicas"));
    }

    #[test]
    fn select_min_and_disabled() {
        let spec = json!({"behavior": {"scaleUp": {"selectPolicy": "Min", "policies": [
            {"type": "Pods", "value": 1, "periodSeconds": 60},
            {"type": "Percent", "value": 50, "periodSeconds": 60}]}}});
        let b = Behavior::from_spec(&spec);
        // From 4: 1 pod gives 5, 50 % gives 6: Min picks 5.
        assert_eq!(apply_rates(t(0), 4, 10, 1, 20, &[], &b).replicas, 5);
        let off =
            Behavior::from_spec(&json!({"behavior": {"scaleDown": {"selectPolicy": "Disabled"}}}));
        assert_eq!(apply_rates(t(0), 4, 1, 1, 20, &[], &off).replicas, 4);
    }

    #[test]
    fn stabilization_keeps_the_highest_recent_recommendation() {
        let b = Behavior::from_spec(&json!({}));
        let recent = [
            Sample { at: t(0), value: 6 },
            Sample {
                at: t(100),
                value: 4,
            },
        ];
        // At 200 s both are inside the 300 s window: down to no lower than 6.
        assert_eq!(stabilize(t(200), 6, 2, &recent, &b), 6);
        // At 301 s the 6 has left the window: 4.
        assert_eq!(stabilize(t(301), 6, 2, &recent, &b), 4);
        // At 401 s both have: the new recommendation, 2.
        assert_eq!(stabilize(t(401), 6, 2, &recent, &b), 2);
        // Scaling up has no window by default.
        assert_eq!(stabilize(t(200), 6, 9, &recent, &b), 9);
    }

    #[test]
    fn default_scale_down_allows_everything_down_to_min() {
        let b = Behavior::from_spec(&json!({}));
        // 100 % per 15 s: from 8 the rate floor is 0, so min binds.
        let l = apply_rates(t(0), 8, 0, 2, 10, &[], &b);
        assert_eq!((l.replicas, l.reason), (2, "TooFewReplicas"));
        assert_eq!(apply_rates(t(0), 8, 3, 2, 10, &[], &b).replicas, 3);
    }
}
