//! Go's `time.Parse` with the RFC 3339 layouts metav1.Time and
//! metav1.MicroTime decode with: which strings it refuses, and its words
//! for them (`parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot
//! parse "x" as "2006"`), so that a refused write reads as upstream's.

const RFC3339: &str = "2006-01-02T15:04:05Z07:00";
const RFC3339_MICRO: &str = "2006-01-02T15:04:05.000000Z07:00";

/// One element of the layout and how it reads a value.
#[derive(Clone, Copy)]
enum Elem {
    Lit(&'static str),
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Micro,
    Zone,
}

impl Elem {
    fn text(self) -> &'static str {
        match self {
            Elem::Lit(s) => s,
            Elem::Year => "2006",
            Elem::Month => "01",
            Elem::Day => "02",
            Elem::Hour => "15",
            Elem::Minute => "04",
            Elem::Second => "05",
            Elem::Micro => ".000000",
            Elem::Zone => "Z07:00",
        }
    }
}

fn digit(s: &[u8], i: usize) -> bool {
    s.get(i).is_some_and(u8::is_ascii_digit)
}

/// Go's `getnum`: one or two digits (exactly two when `fixed`).
fn getnum(s: &[u8], fixed: bool) -> Option<(u32, &[u8])> {
    if !digit(s, 0) {
        return None;
    }
    if !digit(s, 1) {
        if fixed {
            return None;
        }
        return Some((u32::from(s[0] - b'0'), &s[1..]));
    }
    Some((
        u32::from(s[0] - b'0') * 10 + u32::from(s[1] - b'0'),
        &s[2..],
    ))
}

fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Whether Go's `time.Parse` accepts `s` with RFC 3339 (with exactly six
/// fractional digits when `micro`), and its error when it does not.
pub fn check_rfc3339(s: &str, micro: bool) -> Result<(), String> {
    use Elem::*;
    let layout_text = if micro { RFC3339_MICRO } else { RFC3339 };
    let mut layout = vec![
        Year,
        Lit("-"),
        Month,
        Lit("-"),
        Day,
        Lit("T"),
        Hour,
        Lit(":"),
        Minute,
        Lit(":"),
        Second,
    ];
    if micro {
        layout.push(Micro);
    }
    layout.push(Zone);
    let bad = |elem: &str, rest: &[u8]| {
        format!(
            "parsing time {:?} as {:?}: cannot parse {:?} as {:?}",
            s,
            layout_text,
            String::from_utf8_lossy(rest),
            elem
        )
    };
    let range = |what: &str| format!("parsing time {s:?}: {what} out of range");
    let mut v = s.as_bytes();
    let (mut year, mut month, mut day) = (0, 0, 0);
    for (i, &e) in layout.iter().enumerate() {
        let hold = v;
        match e {
            Lit(l) => match v.strip_prefix(l.as_bytes()) {
                Some(rest) => v = rest,
                None => return Err(bad(l, v)),
            },
            Year => {
                if v.len() < 4 || !v[..4].iter().all(u8::is_ascii_digit) {
                    return Err(bad(e.text(), hold));
                }
                year = v[..4]
                    .iter()
                    .fold(0u32, |a, d| a * 10 + u32::from(d - b'0'));
                v = &v[4..];
            }
            Month | Day | Hour | Minute | Second => {
                let fixed = !matches!(e, Hour);
                let Some((n, rest)) = getnum(v, fixed) else {
                    return Err(bad(e.text(), hold));
                };
                v = rest;
                let out = match e {
                    Month => !(1..=12).contains(&n),
                    Hour => n >= 24,
                    Minute | Second => n >= 60,
                    _ => false,
                };
                if out {
                    let what = match e {
                        Month => "month",
                        Hour => "hour",
                        Minute => "minute",
                        _ => "second",
                    };
                    return Err(range(what));
                }
                match e {
                    Month => month = n,
                    Day => day = n,
                    _ => {}
                }
                // A fraction after the seconds is accepted when the
                // layout has none of its own.
                let next_is_fraction = matches!(layout.get(i + 1), Some(Micro));
                if matches!(e, Second)
                    && !next_is_fraction
                    && v.len() >= 2
                    && matches!(v[0], b'.' | b',')
                    && digit(v, 1)
                {
                    let n = 2 + v[2..].iter().take_while(|c| c.is_ascii_digit()).count();
                    v = &v[n..];
                }
            }
            Micro => {
                if v.len() < 7
                    || !matches!(v[0], b'.' | b',')
                    || !v[1..7].iter().all(u8::is_ascii_digit)
                {
                    return Err(bad(e.text(), hold));
                }
                v = &v[7..];
            }
            Zone => {
                if v.first() == Some(&b'Z') {
                    v = &v[1..];
                    continue;
                }
                let ok = v.len() >= 6
                    && v[3] == b':'
                    && matches!(v[0], b'+' | b'-')
                    && v[1..3].iter().all(u8::is_ascii_digit)
                    && v[4..6].iter().all(u8::is_ascii_digit);
                if !ok {
                    return Err(bad(e.text(), hold));
                }
                let hr = u32::from(v[1] - b'0') * 10 + u32::from(v[2] - b'0');
                let mm = u32::from(v[4] - b'0') * 10 + u32::from(v[5] - b'0');
                if hr > 24 {
                    return Err(range("time zone offset hour"));
                }
                if mm > 60 {
                    return Err(range("time zone offset minute"));
                }
                v = &v[6..];
            }
        }
    }
    if !v.is_empty() {
        return Err(format!(
            "parsing time {s:?}: extra text: {:?}",
            String::from_utf8_lossy(v)
        ));
    }
    if day < 1 || day > days_in(month, year) {
        return Err(range("day"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_rfc3339;

    #[test]
    fn accepts_rfc3339() {
        for ok in [
            "2024-02-29T10:00:00Z",
            "2024-01-01T00:00:00.123Z",
            "2024-01-01T23:59:59+02:00",
            "2024-01-01T3:04:05Z",
        ] {
            assert_eq!(check_rfc3339(ok, false), Ok(()), "{ok}");
        }
        assert_eq!(check_rfc3339("2024-01-01T00:00:00.000001Z", true), Ok(()));
    }

    #[test]
    fn refuses_in_gos_words() {
        assert_eq!(
            check_rfc3339("yesterday", false).unwrap_err(),
            r#"parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006""#
        );
        assert_eq!(
            check_rfc3339("2024/01/01", false).unwrap_err(),
            r#"parsing time "2024/01/01" as "2006-01-02T15:04:05Z07:00": cannot parse "/01/01" as "-""#
        );
        assert_eq!(
            check_rfc3339("2024-13-01T00:00:00Z", false).unwrap_err(),
            r#"parsing time "2024-13-01T00:00:00Z": month out of range"#
        );
        assert_eq!(
            check_rfc3339("2023-02-29T00:00:00Z", false).unwrap_err(),
            r#"parsing time "2023-02-29T00:00:00Z": day out of range"#
        );
        assert_eq!(
            check_rfc3339("2024-01-01T00:00:00Zjunk", false).unwrap_err(),
            r#"parsing time "2024-01-01T00:00:00Zjunk": extra text: "junk""#
        );
        assert_eq!(
            check_rfc3339("", false).unwrap_err(),
            r#"parsing time "" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "2006""#
        );
        assert!(check_rfc3339("2024-01-01T00:00:00Z", true).is_err());
    }
}
