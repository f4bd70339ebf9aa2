//! Cron schedules as CronJobs run them, with robfig/cron's standard parser
//! (the one Kubernetes uses): the five fields (minute, hour, day of month,
//! month, day of week) with lists, ranges, steps and month/day names, the
//! `@hourly`-style descriptors and `@every <duration>`. The API server's
//! validation and the CronJob controller both parse here, so a schedule
//! the server stored always runs, and a refused one is refused with the
//! parser's wording.

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// A parsed schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    Fields(Fields),
    /// `@every`: a fixed delay in whole seconds (at least one).
    Every(i64),
}

/// One bit per allowed value of each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fields {
    pub minute: u64,
    pub hour: u64,
    pub dom: u64,
    pub month: u64,
    pub dow: u64,
    /// Whether day of month / day of week were written as `*` (or `?`).
    /// When neither was, a day matching either one fires (the cron rule);
    /// otherwise both must match.
    pub dom_star: bool,
    pub dow_star: bool,
}

/// The bounds of one field, and the names its values may be written as.
struct Field {
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MONTHS: &[&str] = &[
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: &[&str] = &["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

const FIELDS: [Field; 5] = [
    Field {
        min: 0,
        max: 59,
        names: &[],
    },
    Field {
        min: 0,
        max: 23,
        names: &[],
    },
    Field {
        min: 1,
        max: 31,
        names: &[],
    },
    Field {
        min: 1,
        max: 12,
        names: MONTHS,
    },
    Field {
        min: 0,
        max: 6,
        names: DAYS,
    },
];

/// How far ahead a search for the next time looks before giving up (a
/// schedule such as `0 0 30 2 *` never fires).
const HORIZON_YEARS: i16 = 5;

/// Parses a schedule; the error text is the parser's, what the API reports
/// after `Invalid value: "<schedule>": `.
pub fn parse(spec: &str) -> Result<Schedule, String> {
    let spec = spec.trim();
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let expanded = match spec {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        s if s.starts_with('@') => {
            let Some(d) = s.strip_prefix("@every ") else {
                return Err(format!("unrecognized descriptor: {spec}"));
            };
            let ns = crate::duration::parse(d.trim())
                .map_err(|e| format!("failed to parse duration {spec}: {e}"))?;
            // Upstream's constant delay: at least a second, in whole
            // seconds.
            return Ok(Schedule::Every(ns.max(1_000_000_000) / 1_000_000_000));
        }
        s => s,
    };
    let parts: Vec<&str> = expanded.split_whitespace().collect();
    if parts.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            parts.len(),
            parts.join(" ")
        ));
    }
    let mut bits = [0u64; 5];
    let mut star = [false; 5];
    for (i, (part, field)) in parts.iter().zip(FIELDS.iter()).enumerate() {
        for item in part.split(',') {
            let (b, s) = item_bits(item, field, i >= 2)?;
            bits[i] |= b;
            star[i] |= s;
        }
    }
    Ok(Schedule::Fields(Fields {
        minute: bits[0],
        hour: bits[1],
        dom: bits[2],
        month: bits[3],
        dow: bits[4],
        dom_star: star[2],
        dow_star: star[4],
    }))
}

/// The bits of one list item, and whether it was an unstepped wildcard.
/// `question`: whether `?` may stand for `*` (the day fields).
fn item_bits(expr: &str, f: &Field, question: bool) -> Result<(u64, bool), String> {
    let (range, step) = match expr.split_once('/') {
        Some((r, s)) => {
            if s.contains('/') {
                return Err(format!("too many slashes: {expr}"));
            }
            (r, Some(s))
        }
        None => (expr, None),
    };
    let wildcard = range == "*" || (question && range == "?");
    let (start, end) = if wildcard {
        (f.min, f.max)
    } else {
        let bounds: Vec<&str> = range.split('-').collect();
        match bounds.as_slice() {
            [a] => {
                let a = number(a, f)?;
                // `a/n` runs from `a` to the end of the field.
                (a, if step.is_some() { f.max } else { a })
            }
            [a, b] => (number(a, f)?, number(b, f)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match step {
        None => 1,
        Some(st) => match st.parse::<u32>() {
            Ok(0) => return Err(format!("step of range should be a positive number: {expr}")),
            Ok(n) => n,
            Err(_) => {
                return Err(format!(
                    "failed to parse int from {st}: strconv.Atoi: parsing {}: invalid syntax",
                    quote(st)
                ))
            }
        },
    };
    if start < f.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            f.min
        ));
    }
    if end > f.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            f.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    let mut bits = 0u64;
    let mut v = start;
    while v <= end {
        bits |= 1 << v;
        match v.checked_add(step) {
            Some(n) => v = n,
            None => break,
        }
    }
    // A stepped wildcard (`*/5`) restricts the field like a list would.
    Ok((bits, wildcard && step == 1))
}

fn quote(s: &str) -> String {
    format!("\"{s}\"")
}

fn number(s: &str, f: &Field) -> Result<u32, String> {
    let lower = s.to_ascii_lowercase();
    if let Some(i) = f.names.iter().position(|n| *n == lower) {
        // Month names count from 1, day names from 0.
        return Ok(i as u32 + f.min);
    }
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "failed to parse int from {s}: strconv.Atoi: parsing {}: invalid syntax",
            quote(s)
        ));
    }
    s.parse::<u32>().map_err(|_| {
        format!(
            "failed to parse int from {s}: strconv.Atoi: parsing {}: value out of range",
            quote(s)
        )
    })
}

impl Fields {
    fn day_matches(&self, dt: DateTime) -> bool {
        let dom = self.dom & (1 << dt.day()) != 0;
        let dow = self.dow & (1 << dt.weekday().to_sunday_zero_offset()) != 0;
        if self.dom_star || self.dow_star {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// The first minute strictly after `after` that matches, read as wall
    /// time in `tz`.
    fn next(&self, after: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let local = after.to_zoned(tz.clone()).datetime();
        let mut dt = local
            .with()
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .ok()?
            .checked_add(1.minute())
            .ok()?;
        let limit = local.year().saturating_add(HORIZON_YEARS);
        // Each step skips a whole month, day, hour or minute, so the loop
        // is bounded by the horizon; the counter guards against surprises.
        for _ in 0..200_000 {
            if dt.year() > limit {
                return None;
            }
            if self.month & (1 << dt.month()) == 0 {
                dt = dt
                    .first_of_month()
                    .checked_add(1.month())
                    .ok()?
                    .start_of_day();
                continue;
            }
            if !self.day_matches(dt) {
                dt = dt.start_of_day().checked_add(1.day()).ok()?;
                continue;
            }
            if self.hour & (1 << dt.hour()) == 0 {
                dt = dt
                    .with()
                    .minute(0)
                    .build()
                    .ok()?
                    .checked_add(1.hour())
                    .ok()?;
                continue;
            }
            if self.minute & (1 << dt.minute()) == 0 {
                dt = dt.checked_add(1.minute()).ok()?;
                continue;
            }
            // A wall time skipped by a daylight-saving jump runs at the
            // first instant after the gap.
            let ts = tz.to_ambiguous_timestamp(dt).compatible().ok()?;
            if ts > after {
                return Some(ts);
            }
            dt = dt.checked_add(1.minute()).ok()?;
        }
        None
    }
}

impl Schedule {
    /// The first activation strictly after `after`, or None when there is
    /// none within the search horizon.
    pub fn next(&self, after: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        match self {
            Schedule::Fields(f) => f.next(after, tz),
            Schedule::Every(secs) => {
                let whole = Timestamp::from_second(after.as_second()).ok()?;
                whole
                    .checked_add(jiff::SignedDuration::from_secs(*secs))
                    .ok()
            }
        }
    }

    /// The latest activation in `(after, now]`, and a lower bound of how
    /// many that interval holds. It searches back from `now` in widening
    /// windows, so a long-idle every-minute schedule costs no more than a
    /// yearly one.
    pub fn most_recent(
        &self,
        after: Timestamp,
        now: Timestamp,
        tz: &TimeZone,
    ) -> (Option<Timestamp>, usize) {
        let first = match self.next(after, tz) {
            Some(t) if t <= now => t,
            _ => return (None, 0),
        };
        let mut from = after;
        for w in [3600i64, 86_400, 32 * 86_400, 367 * 86_400] {
            let start = now
                .checked_sub(jiff::SignedDuration::from_secs(w))
                .unwrap_or(Timestamp::MIN);
            if start <= after {
                break;
            }
            if self.next(start, tz).is_some_and(|t| t <= now) {
                from = start;
                break;
            }
        }
        // Activations before the window are known to exist only as one.
        let mut count = usize::from(from > after && first <= from);
        let mut latest = None;
        let mut t = from;
        while let Some(n) = self.next(t, tz) {
            if n > now {
                break;
            }
            latest = Some(n);
            count += 1;
            t = n;
        }
        (latest, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn next(spec: &str, after: &str) -> String {
        parse(spec)
            .unwrap()
            .next(ts(after), &TimeZone::UTC)
            .map(|t| t.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn fields_become_bits() {
        let Schedule::Fields(f) = parse("*/15 9-17 1,15 JAN-mar mon-fri").unwrap() else {
            panic!("not fields")
        };
        // Minutes 0, 15, 30, 45.
        assert_eq!(f.minute, 1 | 1 << 15 | 1 << 30 | 1 << 45);
        // Hours 9 through 17 inclusive: nine bits from bit 9.
        assert_eq!(f.hour, ((1 << 9) - 1) << 9);
        assert_eq!(f.dom, 1 << 1 | 1 << 15);
        assert_eq!(f.month, 1 << 1 | 1 << 2 | 1 << 3);
        assert_eq!(f.dow, 0b0111110);
        assert!(!f.dom_star && !f.dow_star);
        // `a/n` runs to the end of the field: 50 and 55.
        let Schedule::Fields(g) = parse("50/5 * * * *").unwrap() else {
            panic!("not fields")
        };
        assert_eq!(g.minute, 1 << 50 | 1 << 55);
    }

    #[test]
    fn rejects_what_the_server_rejects() {
        for bad in [
            "",
            "* * * *",
            "60 * * * *",
            "*/0 * * * *",
            "@often",
            "x * * * *",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse("* * *"),
            Err("expected exactly 5 fields, found 3: [* * *]".into())
        );
    }

    #[test]
    fn accepts_common_schedules() {
        for s in [
            "*/5 * * * *",
            "0 0 * * 0",
            "15 3 1-15/2 JAN-jun mon,wed,fri",
            "0 0 ? * *",
            "@hourly",
            "@every 1h30m",
            "5/15 * * * *",
        ] {
            assert!(parse(s).is_ok(), "{s}");
        }
    }

    #[test]
    fn rejects_with_parser_wording() {
        let err = |s: &str| parse(s).unwrap_err();
        assert_eq!(err("* * *"), "expected exactly 5 fields, found 3: [* * *]");
        assert_eq!(
            err("60 * * * *"),
            "end of range (60) above maximum (59): 60"
        );
        assert_eq!(
            err("* * 0 * *"),
            "beginning of range (0) below minimum (1): 0"
        );
        assert_eq!(err("@often"), "unrecognized descriptor: @often");
        assert_eq!(
            err("@every x"),
            "failed to parse duration @every x: time: invalid duration \"x\""
        );
        assert_eq!(
            err("@every 5"),
            "failed to parse duration @every 5: time: missing unit in duration \"5\""
        );
        assert_eq!(
            err("1/x * * * *"),
            "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"
        );
        assert_eq!(err("1/2/3 * * * *"), "too many slashes: 1/2/3");
        assert_eq!(
            err("5-1 * * * *"),
            "beginning of range (5) beyond end of range (1): 5-1"
        );
        assert!(err("*/0 * * * *").starts_with("step of range"));
        assert!(err("1-2-3 * * * *").starts_with("too many hyphens"));
        assert!(parse("x * * * *").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn every_is_whole_seconds_and_at_least_one() {
        assert_eq!(parse("@every 90s"), Ok(Schedule::Every(90)));
        assert_eq!(parse("@every 1.9s"), Ok(Schedule::Every(1)));
        assert_eq!(parse("@every 1h30m"), Ok(Schedule::Every(5400)));
        // Go's ParseDuration takes these, and the delay is then a second.
        assert_eq!(parse("@every 0"), Ok(Schedule::Every(1)));
        assert_eq!(parse("@every 10ms"), Ok(Schedule::Every(1)));
        assert_eq!(parse("@every -5s"), Ok(Schedule::Every(1)));
    }

    #[test]
    fn next_times_by_hand() {
        // Every minute: the next whole minute, even from 10:00:00 exactly.
        assert_eq!(
            next("* * * * *", "2026-01-01T10:00:00Z"),
            "2026-01-01T10:01:00Z"
        );
        assert_eq!(
            next("* * * * *", "2026-01-01T10:00:30Z"),
            "2026-01-01T10:01:00Z"
        );
        // Every 5 minutes from 10:07 is 10:10.
        assert_eq!(
            next("*/5 * * * *", "2026-01-01T10:07:00Z"),
            "2026-01-01T10:10:00Z"
        );
        // 23:59 on the last day of the year wraps into the next year.
        assert_eq!(
            next("0 0 * * *", "2026-12-31T23:59:00Z"),
            "2027-01-01T00:00:00Z"
        );
        // 2026-01-01 is a Thursday; the next Monday 09:30 is the 5th.
        assert_eq!(
            next("30 9 * * MON", "2026-01-01T12:00:00Z"),
            "2026-01-05T09:30:00Z"
        );
        // Both day fields restricted: the 10th OR a Monday, whichever first
        // (Monday the 5th comes before the 10th).
        assert_eq!(
            next("0 0 10 * 1", "2026-01-01T00:00:00Z"),
            "2026-01-05T00:00:00Z"
        );
        // Day of week unrestricted: only the 10th.
        assert_eq!(
            next("0 0 10 * *", "2026-01-01T00:00:00Z"),
            "2026-01-10T00:00:00Z"
        );
        // Feb 29 only exists in leap years: 2028.
        assert_eq!(
            next("0 0 29 2 *", "2026-03-01T00:00:00Z"),
            "2028-02-29T00:00:00Z"
        );
        // Never: February 30th.
        assert_eq!(next("0 0 30 2 *", "2026-01-01T00:00:00Z"), "");
        assert_eq!(
            next("@hourly", "2026-01-01T10:00:00Z"),
            "2026-01-01T11:00:00Z"
        );
        assert_eq!(
            next("@monthly", "2026-01-15T00:00:00Z"),
            "2026-02-01T00:00:00Z"
        );
        // `@every 90s` adds 90 s to the whole second.
        assert_eq!(
            next("@every 90s", "2026-01-01T10:00:00.5Z"),
            "2026-01-01T10:01:30Z"
        );
    }

    #[test]
    fn time_zones_shift_wall_times() {
        let tz = TimeZone::get("America/New_York").unwrap();
        let s = parse("0 9 * * *").unwrap();
        // 09:00 in New York in January is 14:00 UTC (UTC-5).
        assert_eq!(
            s.next(ts("2026-01-01T00:00:00Z"), &tz).unwrap().to_string(),
            "2026-01-01T14:00:00Z"
        );
        // 02:30 does not exist on 2026-03-08 (clocks jump 02:00 -> 03:00):
        // the run happens right after the gap, at 03:30 EDT = 07:30 UTC.
        let gap = parse("30 2 * * *").unwrap();
        assert_eq!(
            gap.next(ts("2026-03-08T05:00:00Z"), &tz)
                .unwrap()
                .to_string(),
            "2026-03-08T07:30:00Z"
        );
    }

    #[test]
    fn most_recent_counts_missed_runs() {
        let s = parse("*/10 * * * *").unwrap();
        // Between 10:00 (exclusive) and 10:35: 10:10, 10:20, 10:30.
        let (t, n) = s.most_recent(
            ts("2026-01-01T10:00:00Z"),
            ts("2026-01-01T10:35:00Z"),
            &TimeZone::UTC,
        );
        assert_eq!(t.unwrap().to_string(), "2026-01-01T10:30:00Z");
        assert_eq!(n, 3);
        // A year idle with an every-minute schedule: the latest is the
        // current minute, found without walking the whole year.
        let m = parse("* * * * *").unwrap();
        let (t, n) = m.most_recent(
            ts("2025-01-01T00:00:00Z"),
            ts("2026-01-01T10:35:20Z"),
            &TimeZone::UTC,
        );
        assert_eq!(t.unwrap().to_string(), "2026-01-01T10:35:00Z");
        // The last hour's 60 runs, plus at least one before it.
        assert_eq!(n, 61);
        let (t, n) = m.most_recent(
            ts("2026-01-01T10:35:00Z"),
            ts("2026-01-01T10:35:59Z"),
            &TimeZone::UTC,
        );
        assert_eq!((t, n), (None, 0));
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn field() -> impl Strategy<Value = String> {
            prop_oneof![
                Just("*".to_string()),
                (0u32..70).prop_map(|n| n.to_string()),
                (0u32..70, 0u32..70).prop_map(|(a, b)| format!("{a}-{b}")),
                (0u32..70).prop_map(|n| format!("*/{n}")),
                (0u32..70, 0u32..9).prop_map(|(a, n)| format!("{a}/{n}")),
                "[a-zA-Z?,*/0-9-]{0,6}",
            ]
        }

        proptest! {
            #[test]
            fn never_panics_on_any_text(s in "\\PC{0,40}") {
                if let Ok(sched) = parse(&s) {
                    let _ = sched.next(ts("2026-01-01T00:00:00Z"), &TimeZone::UTC);
                }
            }

            #[test]
            fn next_is_later_and_matches(fs in proptest::collection::vec(field(), 5), secs in 0i64..400_000_000) {
                let spec = fs.join(" ");
                let Ok(sched) = parse(&spec) else { return Ok(()) };
                let after = Timestamp::from_second(1_700_000_000 + secs).unwrap();
                if let (Schedule::Fields(f), Some(n)) = (&sched, sched.next(after, &TimeZone::UTC)) {
                    prop_assert!(n > after);
                    let dt = n.to_zoned(TimeZone::UTC).datetime();
                    prop_assert_eq!(dt.second(), 0);
                    prop_assert!(f.minute & (1 << dt.minute()) != 0);
                    prop_assert!(f.hour & (1 << dt.hour()) != 0);
                    prop_assert!(f.month & (1 << dt.month()) != 0);
                    prop_assert!(f.day_matches(dt));
                    // Nothing matching lies in between: the minute before
                    // `n` (if after `after`) yields `n` again.
                    let before = n - jiff::SignedDuration::from_secs(60);
                    if before > after {
                        prop_assert_eq!(sched.next(before, &TimeZone::UTC), Some(n));
                    }
                }
            }
        }
    }
}
