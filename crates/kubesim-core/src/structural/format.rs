//! The string formats and patterns a structural schema may name.
//!
//! Formats are checked as upstream's restricted format registry checks
//! them; a format it does not know is accepted, as upstream accepts it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use regex::Regex;

/// Compiled patterns, kept for the process: CRDs name few, and a pattern
/// is compiled once rather than on every write. None: not a valid regex
/// (the CRD's own validation reports it; here it checks nothing).
pub(super) fn regex(pattern: &str) -> Option<Arc<Regex>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<Arc<Regex>>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = map.get(pattern) {
        return r.clone();
    }
    let compiled = Regex::new(pattern).ok().map(Arc::new);
    // A bound keeps a stream of distinct patterns from growing it forever.
    if map.len() < 4096 {
        map.insert(pattern.to_string(), compiled.clone());
    }
    compiled
}

fn all(s: &str, f: impl Fn(char) -> bool) -> bool {
    !s.is_empty() && s.chars().all(f)
}

fn hex(s: &str, n: usize) -> bool {
    s.len() == n && s.chars().all(|c| c.is_ascii_hexdigit())
}

fn uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5 && [8, 4, 4, 4, 12].iter().zip(&parts).all(|(n, p)| hex(p, *n))
}

fn hostname(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && all(l, |c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

fn date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && [0..4, 5..7, 8..10]
            .into_iter()
            .all(|r| b[r].iter().all(u8::is_ascii_digit))
        && jiff::civil::Date::strptime("%Y-%m-%d", s).is_ok()
}

/// Go's `time.ParseDuration` grammar: `300ms`, `-1.5h`, `2h45m`. A value
/// beyond Go's range is still of the grammar.
fn go_duration(s: &str) -> bool {
    match kubesim_gocompat::duration::parse(s) {
        Ok(_) => true,
        Err(e) => e.is_syntax_ok(),
    }
}

/// Whether `s` is of format `format`.
pub(super) fn string_fits(format: &str, s: &str) -> bool {
    match format {
        "int-or-string" | "password" | "string" | "" => true,
        "byte" => crate::schema::base64_ok(s),
        "date" => date(s),
        "date-time" | "datetime" => crate::schema::rfc3339_ok(s),
        "duration" => go_duration(s),
        "uuid" => uuid(s),
        "uuid3" | "uuid4" | "uuid5" => {
            uuid(s) && s.as_bytes().get(14).map(|c| *c as char) == format.chars().last()
        }
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => s.split_once('/').is_some_and(|(ip, bits)| {
            let v4 = ip.parse::<std::net::Ipv4Addr>().is_ok();
            let v6 = ip.parse::<std::net::Ipv6Addr>().is_ok();
            let max = if v4 { 32 } else { 128 };
            (v4 || v6) && bits.parse::<u8>().is_ok_and(|b| b <= max)
        }),
        "mac" => {
            let parts: Vec<&str> = s.split([':', '-']).collect();
            matches!(parts.len(), 6 | 8 | 20) && parts.iter().all(|p| hex(p, 2))
        }
        "hostname" => hostname(s),
        "email" => s
            .split_once('@')
            .is_some_and(|(u, d)| !u.is_empty() && !u.contains(char::is_whitespace) && hostname(d)),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::string_fits;

    #[test]
    fn formats() {
        assert!(string_fits("ipv4", "10.0.0.1"));
        assert!(!string_fits("ipv4", "10.0.0"));
        assert!(string_fits("cidr", "10.0.0.0/8"));
        assert!(!string_fits("cidr", "10.0.0.0/33"));
        assert!(string_fits("uuid", "123e4567-e89b-12d3-a456-426614174000"));
        assert!(!string_fits("uuid", "not-a-uuid"));
        assert!(string_fits("duration", "1h30m"));
        assert!(!string_fits("duration", "1 hour"));
        assert!(string_fits("date", "2024-02-29"));
        assert!(!string_fits("date", "2023-02-29"));
        assert!(string_fits("date-time", "2024-01-01T00:00:00Z"));
        assert!(!string_fits("date-time", "yesterday"));
        assert!(string_fits("email", "a@example.com"));
        assert!(!string_fits("email", "nobody"));
        assert!(string_fits("some-format-nobody-knows", "x"));
    }
}
