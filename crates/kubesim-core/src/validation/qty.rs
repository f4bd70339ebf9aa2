//! A minimal quantity reader for comparisons inside validation and QoS.
//!
//! Only ordering and sums are needed here (requests ≤ limits, QoS class),
//! so values are held in nano-units and saturate instead of failing on
//! absurd magnitudes. The full `Quantity` type lives elsewhere.

/// A quantity in nano-units (1 = 1e-9), saturating at the i128 range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Nano(pub i128);

impl Nano {
    pub fn saturating_add(self, o: Nano) -> Nano {
        Nano(self.0.saturating_add(o.0))
    }
}

fn pow(base: i128, exp: u32) -> i128 {
    base.checked_pow(exp).unwrap_or(i128::MAX)
}

/// Parses `[+-]?digits[.digits][suffix]`, suffix one of the SI and binary
/// suffixes or a decimal exponent (`e3`, `E-2`). `None` when malformed.
pub fn parse(s: &str) -> Option<Nano> {
    let s = s.trim();
    let (neg, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let num_len = rest
        .bytes()
        .take_while(|c| c.is_ascii_digit() || *c == b'.')
        .count();
    let (num, suffix) = rest.split_at(num_len);
    let (int_part, frac_part) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if frac_part.contains('.') || (int_part.is_empty() && frac_part.is_empty()) {
        return None;
    }
    let (exp10, exp2): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        other => {
            let e = other.strip_prefix(['e', 'E'])?;
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) || e.len() > 6 {
                return None;
            }
            (e.parse().ok()?, 0)
        }
    };
    // Keep at most 36 significant digits so the mantissa fits in i128.
    let digits: String = format!("{int_part}{frac_part}");
    let digits = digits.trim_start_matches('0');
    let (mant_digits, dropped) = if digits.len() > 36 {
        (&digits[..36], digits.len() - 36)
    } else {
        (digits, 0)
    };
    let mantissa: i128 = if mant_digits.is_empty() {
        0
    } else {
        mant_digits.parse().ok()?
    };
    let scale = exp10 + 9 - frac_part.len() as i32 + dropped as i32;
    let mut v = if scale >= 0 {
        mantissa.saturating_mul(pow(10, scale as u32))
    } else {
        let d = pow(10, (-scale) as u32);
        // Round up like upstream does when precision is lost.
        mantissa / d + i128::from(mantissa % d != 0)
    };
    v = v.saturating_mul(pow(2, exp2));
    Some(Nano(if neg { -v } else { v }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_forms() {
        assert_eq!(parse("100m"), Some(Nano(100_000_000)));
        assert_eq!(parse("1"), Some(Nano(1_000_000_000)));
        assert_eq!(parse("0.5"), parse("500m"));
        assert_eq!(parse("1Ki"), Some(Nano(1_024_000_000_000)));
        assert_eq!(parse("1e3"), parse("1k"));
        assert_eq!(parse("-1"), Some(Nano(-1_000_000_000)));
        assert!(parse("1Gi") > parse("1G"));
        assert_eq!(parse(""), None);
        assert_eq!(parse("abc"), None);
        assert_eq!(parse("1.2.3"), None);
        assert_eq!(parse("1Xi"), None);
        assert_eq!(parse("."), None);
        assert!(parse("999999999999999999999999999999999999999999Ei").is_some());
    }
}
