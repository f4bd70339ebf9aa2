//! Name and key matchers with upstream's exact error texts.
//!
//! Clients (and people) match on these messages, so they follow the wording
//! of apimachinery's `util/validation` word for word, including its quirks
//! (the double space in example lists).

/// Longest DNS-1123 label.
pub const DNS1123_LABEL_MAX: usize = 63;
/// Longest DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX: usize = 253;
/// Longest label value and qualified-name name part.
pub const LABEL_VALUE_MAX: usize = 63;
/// Longest config-map / secret key.
pub const CONFIG_KEY_MAX: usize = 253;

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const CONFIG_KEY_MSG: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
const CONFIG_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const PERCENT_MSG: &str =
    "a valid percent string must be a numeric string followed by an ending '%'";

/// Upstream's `RegexError`: message, examples, then the pattern.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(e);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            lower_alnum(f) && lower_alnum(l) && b.iter().all(|&c| lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// A DNS-1123 label: namespace names, container names, port names of services.
pub fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_error(DNS1123_LABEL_MAX));
    }
    if !matches_dns1123_label(s) {
        errs.push(regex_error(
            DNS1123_LABEL_MSG,
            DNS1123_LABEL_FMT,
            &["my-name", "123-abc"],
        ));
    }
    errs
}

/// A DNS-1123 subdomain: the name of most objects.
pub fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    if !is_dns1123_subdomain_syntax(s) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

fn is_dns1123_subdomain_syntax(s: &str) -> bool {
    !s.is_empty() && s.split('.').all(matches_dns1123_label)
}

/// A DNS-1035 label: service names, CRD plural names, CRD version names.
pub fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_error(DNS1123_LABEL_MAX));
    }
    let ok = matches_dns1123_label(s) && s.as_bytes()[0].is_ascii_lowercase();
    if !ok {
        errs.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

fn alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            alnum(f)
                && alnum(l)
                && b.iter()
                    .all(|&c| alnum(c) || c == b'-' || c == b'_' || c == b'.')
        }
        _ => false,
    }
}

/// A qualified name (`[prefix/]name`): label keys, annotation keys, finalizers.
pub fn qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for m in dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {m}"));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > LABEL_VALUE_MAX {
        errs.push(format!("name part {}", max_len_error(LABEL_VALUE_MAX)));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// A label value: empty, or a qualified-name part of at most 63 characters.
pub fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > LABEL_VALUE_MAX {
        errs.push(max_len_error(LABEL_VALUE_MAX));
    }
    if !s.is_empty() && !matches_qualified_name_part(s) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// A key of a ConfigMap or Secret: it becomes a file name when mounted.
pub fn config_map_key(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > CONFIG_KEY_MAX {
        errs.push(max_len_error(CONFIG_KEY_MAX));
    }
    let ok = !s.is_empty()
        && s.bytes()
            .all(|c| alnum(c) || c == b'-' || c == b'_' || c == b'.');
    if !ok {
        errs.push(regex_error(
            CONFIG_KEY_MSG,
            CONFIG_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if s == "." {
        errs.push("must not be '.'".to_string());
    } else if s == ".." {
        errs.push("must not be '..'".to_string());
    } else if s.starts_with("..") {
        errs.push("must not start with '..'".to_string());
    }
    errs
}

/// What every name must satisfy to be usable as a URL path segment.
pub fn path_segment_name(s: &str, prefix: bool) -> Vec<String> {
    let mut errs = Vec::new();
    if prefix {
        // A generateName prefix is completed by a suffix, so only the
        // separators matter, not the dot names.
    } else if s == "." || s == ".." {
        errs.push(format!("may not be '{s}'"));
    }
    for bad in ["/", "%"] {
        if s.contains(bad) {
            errs.push(format!("may not contain '{bad}'"));
        }
    }
    errs
}

/// An IANA service name, the form of a container or service port name.
pub fn port_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 15 {
        errs.push(max_len_error(15));
    }
    if !s
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if s.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if !s.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if s.starts_with('-') || s.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

pub fn port_number(n: i64) -> Vec<String> {
    if (1..=65535).contains(&n) {
        Vec::new()
    } else {
        vec!["must be between 1 and 65535, inclusive".into()]
    }
}

/// `[0-9]+%`
pub fn percent(s: &str) -> Vec<String> {
    let ok = s
        .strip_suffix('%')
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()));
    if ok {
        Vec::new()
    } else {
        vec![regex_error(PERCENT_MSG, "[0-9]+%", &["1%", "93%"])]
    }
}

/// How a kind names its objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    Dns1123Subdomain,
    Dns1123Label,
    Dns1035Label,
    /// Anything usable in a URL path (RBAC objects carry `:` in their names).
    PathSegment,
}

impl NameRule {
    /// Checks `name`; `prefix` is set for `generateName`, whose trailing
    /// dash is completed by the random suffix and so is not an error.
    pub fn check(self, name: &str, prefix: bool) -> Vec<String> {
        let masked;
        let name = if prefix && name.ends_with('-') {
            masked = format!("{}a", &name[..name.len() - 1]);
            masked.as_str()
        } else {
            name
        };
        match self {
            NameRule::Dns1123Subdomain => dns1123_subdomain(name),
            NameRule::Dns1123Label => dns1123_label(name),
            NameRule::Dns1035Label => dns1035_label(name),
            NameRule::PathSegment => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdomain_message_is_upstreams() {
        let e = dns1123_subdomain("Bad_Name");
        assert_eq!(
            e,
            vec!["a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string()]
        );
        assert!(dns1123_subdomain("a.b-c.d1").is_empty());
        assert!(!dns1123_subdomain("a..b").is_empty());
        assert!(!dns1123_subdomain(".a").is_empty());
        assert!(!dns1123_subdomain("").is_empty());
        assert_eq!(dns1123_subdomain(&"a".repeat(254)).len(), 1);
    }

    #[test]
    fn label_message_has_upstreams_double_space() {
        let e = dns1123_label("-x");
        assert!(e[0].contains("(e.g. 'my-name',  or '123-abc', regex"));
        assert!(dns1123_label("a-1").is_empty());
        assert!(!dns1123_label("a.b").is_empty());
        assert_eq!(dns1123_label(&"a".repeat(64)), vec![max_len_error(63)]);
    }

    #[test]
    fn dns1035_needs_leading_letter() {
        assert!(dns1035_label("web").is_empty());
        assert!(!dns1035_label("1web").is_empty());
    }

    #[test]
    fn qualified_names() {
        assert!(qualified_name("app").is_empty());
        assert!(qualified_name("example.com/My_Name.x").is_empty());
        assert_eq!(qualified_name("/x"), vec!["prefix part must be non-empty"]);
        assert!(qualified_name("a/b/c")[0].starts_with("a qualified name must consist"));
        assert!(qualified_name("Ex.com/x")[0].starts_with("prefix part a lowercase RFC 1123"));
        assert!(qualified_name("x/")[0] == "name part must be non-empty");
        assert_eq!(qualified_name(&"a".repeat(64)).len(), 1);
    }

    #[test]
    fn label_values() {
        assert!(label_value("").is_empty());
        assert!(label_value("My_value-1.2").is_empty());
        assert!(!label_value("-x").is_empty());
        assert_eq!(label_value(&"a".repeat(64)), vec![max_len_error(63)]);
    }

    #[test]
    fn config_keys() {
        assert!(config_map_key("app.properties").is_empty());
        assert!(config_map_key("KEY_1-x").is_empty());
        assert_eq!(config_map_key("..a"), vec!["must not start with '..'"]);
        assert_eq!(config_map_key(".."), vec!["must not be '..'"]);
        assert_eq!(config_map_key("a/b").len(), 1);
    }

    #[test]
    fn path_segments_and_prefixes() {
        assert_eq!(path_segment_name("..", false), vec!["may not be '..'"]);
        assert_eq!(path_segment_name("a/b", false), vec!["may not contain '/'"]);
        assert!(path_segment_name("system:node", false).is_empty());
        assert!(NameRule::Dns1123Subdomain.check("web-", true).is_empty());
        assert!(!NameRule::Dns1123Subdomain.check("web-", false).is_empty());
    }

    #[test]
    fn ports() {
        assert!(port_name("http").is_empty());
        assert_eq!(
            port_name("80"),
            vec!["must contain at least one letter (a-z)"]
        );
        assert!(port_number(0).len() == 1 && port_number(65535).is_empty());
        assert!(percent("25%").is_empty() && !percent("x%").is_empty());
    }
}
