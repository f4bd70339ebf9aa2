//! Go's `time.Duration` as text: `time.ParseDuration`'s grammar
//! (`[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or `0`) and `Duration.String`'s
//! output. kwok and Apate files, ClusterLoader2 configs, cron's `@every`,
//! the `duration` format of OpenAPI schemas and protobuf bodies all write
//! durations this way; reading and printing them like Go does means a file
//! is accepted, and a duration printed, exactly where Go's would be.

use std::fmt;
use std::time::Duration;

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000 * NANOSECOND;
const MILLISECOND: u64 = 1_000 * MICROSECOND;
const SECOND: u64 = 1_000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// Go's magnitude limit: a duration is an `int64` of nanoseconds, so the
/// sum may reach 2^63 only when it is then negated.
const LIMIT: u64 = 1 << 63;

/// Why a text is not a duration. `Display` is Go's error text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError {
    kind: ErrorKind,
    /// Go's message, which quotes the text as Go's `time` package does.
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ErrorKind {
    /// Not of the grammar.
    Syntax,
    /// Of the grammar, but beyond an `int64` of nanoseconds.
    OutOfRange,
    /// Of the grammar and in range, but negative where a length of time
    /// is wanted ([`parse_std`]).
    Negative,
}

impl DurationError {
    /// Whether the text is of the grammar and only its value is refused
    /// (too large, or negative where that is not allowed). A check of the
    /// syntax alone, such as OpenAPI's `duration` format, accepts these.
    pub fn is_syntax_ok(&self) -> bool {
        self.kind != ErrorKind::Syntax
    }
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DurationError {}

/// Parses as `time.ParseDuration`: a signed number of nanoseconds.
pub fn parse(s: &str) -> Result<i64, DurationError> {
    let invalid = |kind| DurationError {
        kind,
        message: format!("time: invalid duration {}", quote(s)),
    };
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid(ErrorKind::Syntax));
    }
    let mut total: u64 = 0;
    // Go stops at the first overflow; the scan goes on only to tell a
    // caller checking syntax alone whether the rest is of the grammar.
    let mut overflowed = false;
    while !rest.is_empty() {
        let first = rest.as_bytes()[0];
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid(ErrorKind::Syntax));
        }
        let (whole, after_int, int_overflow) = leading_int(rest);
        let pre = after_int.len() != rest.len();
        rest = after_int;
        let (mut fraction, mut scale, mut post) = (0u64, 1f64, false);
        if let Some(after_point) = rest.strip_prefix('.') {
            let (f, sc, r) = leading_fraction(after_point);
            post = r.len() != after_point.len();
            (fraction, scale, rest) = (f, sc, r);
        }
        if !pre && !post {
            return Err(invalid(ErrorKind::Syntax));
        }
        let unit_len = rest
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(rest.len());
        if unit_len == 0 {
            return Err(DurationError {
                kind: ErrorKind::Syntax,
                message: format!("time: missing unit in duration {}", quote(s)),
            });
        }
        let (name, tail) = rest.split_at(unit_len);
        rest = tail;
        let Some(unit) = unit(name) else {
            return Err(DurationError {
                kind: ErrorKind::Syntax,
                message: format!(
                    "time: unknown unit {} in duration {}",
                    quote(name),
                    quote(s)
                ),
            });
        };
        if overflowed || int_overflow || whole > LIMIT / unit {
            overflowed = true;
            continue;
        }
        let mut v = whole * unit;
        if fraction > 0 {
            // As Go computes it, in float64: exact to the nanosecond for
            // fractions of an hour, and the same rounding where it is not.
            v += (fraction as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                overflowed = true;
                continue;
            }
        }
        total += v;
        if total > LIMIT {
            overflowed = true;
        }
    }
    if overflowed || (!neg && total > LIMIT - 1) {
        return Err(invalid(ErrorKind::OutOfRange));
    }
    Ok(if neg {
        // 2^63 itself negates to i64::MIN.
        (total as i64).wrapping_neg()
    } else {
        total as i64
    })
}

/// Parses a length of time: as [`parse`], refusing negative durations.
pub fn parse_std(s: &str) -> Result<Duration, DurationError> {
    let ns = parse(s)?;
    u64::try_from(ns)
        .map(Duration::from_nanos)
        .map_err(|_| DurationError {
            kind: ErrorKind::Negative,
            message: format!("negative duration {}", quote(s)),
        })
}

fn unit(name: &str) -> Option<u64> {
    Some(match name {
        "ns" => NANOSECOND,
        // U+00B5 (micro sign) and U+03BC (Greek small letter mu), as Go.
        "us" | "µs" | "μs" => MICROSECOND,
        "ms" => MILLISECOND,
        "s" => SECOND,
        "m" => MINUTE,
        "h" => HOUR,
        _ => return None,
    })
}

/// The leading `[0-9]*`, the rest, and whether the number passed 2^63.
fn leading_int(s: &str) -> (u64, &str, bool) {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let mut x: u64 = 0;
    for c in s[..digits].bytes() {
        if x > LIMIT / 10 {
            return (0, &s[digits..], true);
        }
        x = x * 10 + u64::from(c - b'0');
        if x > LIMIT {
            return (0, &s[digits..], true);
        }
    }
    (x, &s[digits..], false)
}

/// The leading `[0-9]*` after a point, as digits and their power of ten.
/// Digits past what fits are dropped, not an error, as Go drops them.
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (mut x, mut scale, mut full) = (0u64, 1f64, false);
    for c in s[..digits].bytes() {
        if full || x > (LIMIT - 1) / 10 {
            full = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > LIMIT {
            full = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[digits..])
}

/// A text in double quotes as Go's `time` package quotes it in errors:
/// `"` and `\` escaped, and every byte of a control or non-ASCII
/// character as `\xNN`.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c < ' ' || !c.is_ascii() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// Prints as Go's `Duration.String`: `1h2m3.5s`, `1.5ms`, `-2µs`, `0s`.
pub fn format(ns: i64) -> String {
    /// `v` as whole units of 10^digits and the rest as decimals, trailing
    /// zeros dropped.
    fn split(v: u64, digits: u32) -> (u64, String) {
        let p = 10u64.pow(digits);
        let f = v % p;
        let decimals = if f == 0 {
            String::new()
        } else {
            let s = format!(".{f:0width$}", width = digits as usize);
            s.trim_end_matches('0').to_string()
        };
        (v / p, decimals)
    }
    let sign = if ns < 0 { "-" } else { "" };
    let u = ns.unsigned_abs();
    if u == 0 {
        return "0s".into();
    }
    if u < SECOND {
        let (digits, unit) = match u {
            0..MICROSECOND => (0, "ns"),
            MICROSECOND..MILLISECOND => (3, "µs"),
            _ => (6, "ms"),
        };
        let (whole, decimals) = split(u, digits);
        return format!("{sign}{whole}{decimals}{unit}");
    }
    let (secs, decimals) = split(u, 9);
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match (h, secs / 60) {
        (0, 0) => format!("{sign}{s}{decimals}s"),
        (0, _) => format!("{sign}{m}m{s}{decimals}s"),
        _ => format!("{sign}{h}h{m}m{s}{decimals}s"),
    }
}

/// [`format`](fn@format) for a std `Duration`; one beyond Go's range (292 years)
/// prints as the largest Go duration.
pub fn format_std(d: Duration) -> String {
    format(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn go_examples() {
        assert_eq!(parse("0"), Ok(0));
        assert_eq!(parse("-0"), Ok(0));
        assert_eq!(parse("+0"), Ok(0));
        assert_eq!(parse("300ms"), Ok(300_000_000));
        assert_eq!(parse("1.5h"), Ok(5_400_000_000_000));
        assert_eq!(parse("2h45m"), Ok(9_900_000_000_000));
        assert_eq!(parse("-2s"), Ok(-2_000_000_000));
        assert_eq!(parse("+5s"), Ok(5_000_000_000));
        assert_eq!(parse("1m30.5s"), Ok(90_500_000_000));
        assert_eq!(parse(".5s"), Ok(500_000_000));
        assert_eq!(parse("1.s"), Ok(1_000_000_000));
        assert_eq!(parse("170s"), Ok(170_000_000_000));
        assert_eq!(parse("1µs"), Ok(1_000));
        assert_eq!(parse("1μs"), Ok(1_000));
        assert_eq!(parse("1us"), Ok(1_000));
        assert_eq!(parse("3h3ns"), Ok(10_800_000_000_003));
        for bad in [
            "", "s", "1", "1x", "1.s.", "--1s", "1s2", ".", ".s", "-.s", "1 s", "-",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(parse_std("-1s").is_err());
        assert_eq!(parse_std("1m"), Ok(Duration::from_secs(60)));
    }

    #[test]
    fn go_error_text() {
        let msg = |s: &str| parse(s).unwrap_err().to_string();
        assert_eq!(msg(""), "time: invalid duration \"\"");
        assert_eq!(msg("x"), "time: invalid duration \"x\"");
        assert_eq!(msg("1"), "time: missing unit in duration \"1\"");
        assert_eq!(msg("3d"), "time: unknown unit \"d\" in duration \"3d\"");
        assert_eq!(
            msg("1é"),
            "time: unknown unit \"\\xc3\\xa9\" in duration \"1\\xc3\\xa9\""
        );
        assert_eq!(
            msg("9223372036854775808ns"),
            "time: invalid duration \"9223372036854775808ns\""
        );
    }

    #[test]
    fn the_edges_of_int64() {
        assert_eq!(parse("9223372036854775807ns"), Ok(i64::MAX));
        assert!(parse("9223372036854775808ns").is_err());
        assert_eq!(parse("-9223372036854775808ns"), Ok(i64::MIN));
        assert!(parse("-9223372036854775809ns").is_err());
        assert_eq!(parse("2562047h47m16.854775807s"), Ok(i64::MAX));
        let e = parse("2562048h").unwrap_err();
        assert!(e.is_syntax_ok());
        // An overflow first and a syntax error later: not of the grammar.
        assert!(!parse("99999999999999999999hx").unwrap_err().is_syntax_ok());
        assert!(!parse("1").unwrap_err().is_syntax_ok());
    }

    #[test]
    fn fractions_round_as_go_does() {
        // Go multiplies in float64: 9 × 3.6 = 32.4 ns, not 9 × 3.
        assert_eq!(parse("0.000000000009h"), Ok(32));
        assert_eq!(parse("0.3ns"), Ok(0));
        assert_eq!(parse("1.123456789123s"), Ok(1_123_456_789));
        // Digits past what fits in 63 bits are dropped.
        assert_eq!(parse("1.00000000000000000000000001s"), Ok(1_000_000_000));
    }

    #[test]
    fn string_as_go_prints() {
        let cases: [(i64, &str); 19] = [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (1_500_000, "1.5ms"),
            (1_000_000_000, "1s"),
            (3_723_500_000_000, "1h2m3.5s"),
            (-2_000_000_000, "-2s"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (250_000_000, "250ms"),
            (1_500_000_000, "1.5s"),
            (5_000_000_000, "5s"),
            (90_000_000_000, "1m30s"),
            (3_600_000_000_000, "1h0m0s"),
            (4_000_000_001, "4.000000001s"),
            (-2_000, "-2µs"),
            (5_400_000_000_000, "1h30m0s"),
            (i64::MAX, "2562047h47m16.854775807s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ];
        for (ns, s) in cases {
            assert_eq!(format(ns), s, "{ns}");
        }
        assert_eq!(format_std(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_std(Duration::from_nanos(7)), "7ns");
        assert_eq!(format_std(Duration::MAX), "2562047h47m16.854775807s");
    }

    proptest! {
        #[test]
        fn never_panics(s in ".{0,24}") {
            let _ = parse(&s);
        }

        #[test]
        fn seconds_round_trip(n in 0u32..1_000_000) {
            prop_assert_eq!(parse(&format!("{n}s")).unwrap(), i64::from(n) * 1_000_000_000);
        }

        #[test]
        fn printed_durations_parse_back(ns in any::<i64>()) {
            prop_assert_eq!(parse(&format(ns)), Ok(ns));
        }
    }
}
