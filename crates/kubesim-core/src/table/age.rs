//! Relative times as kube-apiserver renders them (`duration.HumanDuration`):
//! about two to three significant figures, so that `kubectl get` columns stay
//! narrow and an age reads the same whichever server produced it.

use jiff::Timestamp;
use serde_json::Value;

/// Renders an elapsed time given in nanoseconds.
///
/// The thresholds follow upstream exactly: seconds up to two minutes, then
/// minutes (with seconds below ten minutes), hours (with minutes below eight
/// hours), days (with hours below eight days) and years (with days below
/// eight years). Up to one second in the future still reads "0s", because
/// clocks of different machines disagree a little; more than that is
/// `"<invalid>"`.
pub fn human_duration_nanos(nanos: i128) -> String {
    // Go durations are int64 nanoseconds and saturate; keep the same range so
    // that absurd timestamps give the same answer.
    let d = nanos.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
    // Integer division truncates toward zero, as Go's int(d.Seconds()) does.
    let seconds = d / 1_000_000_000;
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{}h", hours / 24, h)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{}d", hours / 24 / 365, dy)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// [`human_duration_nanos`] for a `jiff` duration.
pub fn human_duration(d: jiff::SignedDuration) -> String {
    human_duration_nanos(d.as_nanos())
}

/// Go's zero `time.Time`, which the API serializes as this instant when a
/// timestamp was never set; upstream prints it as "<unknown>".
fn is_zero_time(t: Timestamp) -> bool {
    t.as_second() == -62_135_596_800 && t.subsec_nanosecond() == 0
}

/// A timestamp field as a point in time; `None` when absent, null, empty or
/// unparsable (upstream cannot hold an unparsable time, so it treats all of
/// these as unset).
pub fn parse_ts(v: Option<&Value>) -> Option<Timestamp> {
    let s = v?.as_str()?;
    let t: Timestamp = s.parse().ok()?;
    (!is_zero_time(t)).then_some(t)
}

/// How long ago `t` was, or "<unknown>" when it is unset
/// (upstream `translateTimestampSince`).
pub fn since(now: Timestamp, t: Option<&Value>) -> String {
    match parse_ts(t) {
        Some(t) => between(t, now),
        None => "<unknown>".into(),
    }
}

/// `to - from`, rendered.
pub fn between(from: Timestamp, to: Timestamp) -> String {
    human_duration_nanos(to.as_nanosecond() - from.as_nanosecond())
}

/// The object's age: how long ago `metadata.creationTimestamp` was.
pub fn age(now: Timestamp, obj: &Value) -> String {
    since(now, obj.pointer("/metadata/creationTimestamp"))
}

/// A CRD `date` column cell: unparsable strings are "<invalid>", the empty
/// string and the zero time are "<unknown>".
pub fn date_cell(now: Timestamp, s: &str) -> String {
    if s.is_empty() || s == "null" {
        return "<unknown>".into();
    }
    match s.parse::<Timestamp>() {
        Ok(t) if is_zero_time(t) => "<unknown>".into(),
        Ok(t) => between(t, now),
        Err(_) => "<invalid>".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: i64) -> String {
        human_duration_nanos(s as i128 * 1_000_000_000)
    }

    #[test]
    fn human_duration_thresholds() {
        let cases: &[(i64, &str)] = &[
            (-3, "<invalid>"),
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (1, "1s"),
            (59, "59s"),
            (60, "60s"),
            (119, "119s"),
            (120, "2m"),
            (123, "2m3s"),
            (599, "9m59s"),
            (600, "10m"),
            (601, "10m"),
            (3 * 3600 - 1, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60 * 5, "3h5m"),
            (8 * 3600 - 1, "7h59m"),
            (8 * 3600, "8h"),
            (47 * 3600 + 3599, "47h"),
            (48 * 3600, "2d"),
            (49 * 3600, "2d1h"),
            (8 * 86400 - 1, "7d23h"),
            (8 * 86400, "8d"),
            (2 * 365 * 86400 - 1, "729d"),
            (2 * 365 * 86400, "2y"),
            (2 * 365 * 86400 + 86400 * 3, "2y3d"),
            (8 * 365 * 86400, "8y"),
            (30 * 365 * 86400 + 86400 * 100, "30y"),
        ];
        for (s, want) in cases {
            assert_eq!(&secs(*s), want, "{s}s");
        }
    }

    #[test]
    fn fractions_truncate_toward_zero() {
        assert_eq!(human_duration_nanos(1_999_999_999), "1s");
        assert_eq!(human_duration_nanos(-1_999_999_999), "0s");
        assert_eq!(human_duration_nanos(-2_000_000_000), "<invalid>");
        assert_eq!(human_duration_nanos(i128::MAX), "292y");
    }

    #[test]
    fn timestamps() {
        let now: Timestamp = "2024-05-01T12:00:00Z".parse().unwrap();
        let v = serde_json::json!("2024-05-01T11:55:00Z");
        assert_eq!(since(now, Some(&v)), "5m");
        assert_eq!(since(now, None), "<unknown>");
        assert_eq!(
            since(now, Some(&serde_json::json!("0001-01-01T00:00:00Z"))),
            "<unknown>"
        );
        assert_eq!(since(now, Some(&serde_json::json!("garbage"))), "<unknown>");
        assert_eq!(date_cell(now, "garbage"), "<invalid>");
        assert_eq!(date_cell(now, ""), "<unknown>");
        assert_eq!(date_cell(now, "2024-04-29T12:00:00Z"), "2d");
    }
}
