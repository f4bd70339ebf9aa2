//! Label key and value syntax, with upstream's wording so clients that match
//! on error text (and humans used to kubectl) see familiar messages.

pub(crate) use crate::validation::names::{
    label_value as label_value_errors, qualified_name as qualified_name_errors,
};

/// Go's `%q` closely enough for the ASCII-heavy values seen here.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `field.Invalid(path, value, detail).Error()`.
pub(crate) fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", go_quote(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names() {
        for ok in [
            "a",
            "app",
            "A.b-c_d",
            "app.kubernetes.io/name",
            "x/y",
            "1",
            &"a".repeat(63),
        ] {
            assert!(qualified_name_errors(ok).is_empty(), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "a b",
            "/a",
            "a/",
            "A.io/x",
            "a/b/c",
            &"a".repeat(64),
            "a$b",
        ] {
            assert!(!qualified_name_errors(bad).is_empty(), "{bad}");
        }
        let long_prefix = format!("{}/x", "a".repeat(254));
        assert_eq!(
            qualified_name_errors(&long_prefix),
            vec!["prefix part must be no more than 253 characters".to_string()]
        );
    }

    #[test]
    fn label_values() {
        for ok in ["", "a", "a.b_c-d", "0", &"v".repeat(63)] {
            assert!(label_value_errors(ok).is_empty(), "{ok}");
        }
        for bad in ["-", "a_", ".a", "a b", &"v".repeat(64), "ü"] {
            assert!(!label_value_errors(bad).is_empty(), "{bad}");
        }
    }

    #[test]
    fn quoting() {
        assert_eq!(go_quote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\x01\"");
    }
}
