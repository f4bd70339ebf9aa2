//! Cron schedule syntax as CronJobs accept it (the standard five fields plus
//! `@hourly`-style descriptors), with the parser's error wording.

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

const DESCRIPTORS: &[&str] = &[
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
];

/// Checks a schedule; the error text is what the API reports after
/// `Invalid value: "<schedule>": `.
pub fn check(spec: &str) -> Result<(), String> {
    let spec = spec.trim();
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    if spec.starts_with('@') {
        if DESCRIPTORS.contains(&spec) {
            return Ok(());
        }
        if let Some(d) = spec.strip_prefix("@every ") {
            return if valid_duration(d.trim()) {
                Ok(())
            } else {
                Err(format!(
                    "failed to parse duration {spec}: time: invalid duration {}",
                    quote(d.trim())
                ))
            };
        }
        return Err(format!("unrecognized descriptor: {spec}"));
    }
    let parts: Vec<&str> = spec.split_whitespace().collect();
    if parts.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            parts.len(),
            parts.join(" ")
        ));
    }
    for (i, (p, f)) in parts.iter().zip(FIELDS.iter()).enumerate() {
        for item in p.split(',') {
            check_range(item, f, i >= 2)?;
        }
    }
    Ok(())
}

fn quote(s: &str) -> String {
    format!("\"{s}\"")
}

fn check_range(expr: &str, f: &Field, allow_question: bool) -> Result<(), String> {
    let (range, step) = match expr.split_once('/') {
        Some((r, s)) => {
            if s.contains('/') {
                return Err(format!("too many slashes: {expr}"));
            }
            (r, Some(s))
        }
        None => (expr, None),
    };
    let (start, end) = if range == "*" || (allow_question && range == "?") {
        (f.min, f.max)
    } else {
        let bounds: Vec<&str> = range.split('-').collect();
        match bounds.as_slice() {
            [a] => {
                let a = number(a, f)?;
                // `a/n` means from `a` to the end of the range.
                (a, if step.is_some() { f.max } else { a })
            }
            [a, b] => (number(a, f)?, number(b, f)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    if let Some(st) = step {
        match st.parse::<u32>() {
            Ok(0) => return Err(format!("step of range should be a positive number: {expr}")),
            Ok(_) => {}
            Err(_) => {
                return Err(format!(
                    "failed to parse int from {st}: strconv.Atoi: parsing {}: invalid syntax",
                    quote(st)
                ))
            }
        }
    }
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
    Ok(())
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

/// A Go duration such as `1h30m`, `90s`, `1.5h`.
fn valid_duration(d: &str) -> bool {
    let mut rest = d;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let n = rest
            .bytes()
            .take_while(|c| c.is_ascii_digit() || *c == b'.')
            .count();
        if n == 0 {
            return false;
        }
        rest = &rest[n..];
        let unit = ["ns", "us", "µs", "ms", "s", "m", "h"]
            .iter()
            .filter(|u| rest.starts_with(**u))
            .max_by_key(|u| u.len());
        match unit {
            Some(u) => rest = &rest[u.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert_eq!(check(s), Ok(()), "{s}");
        }
    }

    #[test]
    fn rejects_with_parser_wording() {
        assert_eq!(
            check("* * *"),
            Err("expected exactly 5 fields, found 3: [* * *]".into())
        );
        assert_eq!(
            check("60 * * * *"),
            Err("end of range (60) above maximum (59): 60".into())
        );
        assert_eq!(
            check("* * 0 * *"),
            Err("beginning of range (0) below minimum (1): 0".into())
        );
        assert_eq!(
            check("@often"),
            Err("unrecognized descriptor: @often".into())
        );
        assert!(check("*/0 * * * *").is_err());
        assert!(check("1-2-3 * * * *").is_err());
        assert!(check("x * * * *").is_err());
        assert!(check("").is_err());
        assert!(check("@every x").is_err());
    }
}
