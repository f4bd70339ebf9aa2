//! Go's duration syntax (`time.ParseDuration`): what kwok and Apate files
//! write delays and timestamps in ("1.5h", "10ms", "1m30s", "-2s").

use std::time::Duration;

/// A signed Go duration in nanoseconds.
pub fn parse_go_duration(s: &str) -> Result<i128, String> {
    let bad = || format!("{s:?} is not a duration (e.g. 300ms, 1.5h, 2h45m)");
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let (num, tail) = rest.split_at(num_end);
        if num.is_empty() || num == "." {
            return Err(bad());
        }
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let scale: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(bad()),
        };
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        let int: i128 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| bad())?
        };
        let mut part = int.checked_mul(scale).ok_or_else(bad)?;
        // Fraction digits beyond nanosecond precision are dropped, as Go does.
        let mut unit_scale = scale;
        for d in frac.chars() {
            unit_scale /= 10;
            part += (d.to_digit(10).ok_or_else(bad)? as i128) * unit_scale;
        }
        total = total.checked_add(part).ok_or_else(bad)?;
        rest = tail;
    }
    if total > i64::MAX as i128 {
        return Err(bad());
    }
    Ok(if neg { -total } else { total })
}

/// A Go duration that must not be negative, as a std `Duration`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let ns = parse_go_duration(s)?;
    if ns < 0 {
        return Err(format!("{s:?} is negative"));
    }
    Ok(Duration::from_nanos(ns as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn go_examples() {
        assert_eq!(parse_go_duration("0").unwrap(), 0);
        assert_eq!(parse_go_duration("300ms").unwrap(), 300_000_000);
        assert_eq!(parse_go_duration("1.5h").unwrap(), 5_400_000_000_000);
        assert_eq!(parse_go_duration("2h45m").unwrap(), 9_900_000_000_000);
        assert_eq!(parse_go_duration("-2s").unwrap(), -2_000_000_000);
        assert_eq!(parse_go_duration("1m30.5s").unwrap(), 90_500_000_000);
        assert_eq!(parse_go_duration(".5s").unwrap(), 500_000_000);
        assert_eq!(parse_go_duration("170s").unwrap(), 170_000_000_000);
        for bad in ["", "s", "1", "1x", "1.s.", "--1s", "1s2", "."] {
            assert!(parse_go_duration(bad).is_err(), "{bad}");
        }
        assert!(parse_duration("-1s").is_err());
    }

    proptest! {
        #[test]
        fn never_panics(s in ".{0,24}") {
            let _ = parse_go_duration(&s);
        }

        #[test]
        fn seconds_round_trip(n in 0u32..1_000_000) {
            prop_assert_eq!(parse_go_duration(&format!("{n}s")).unwrap(), n as i128 * 1_000_000_000);
        }
    }
}
