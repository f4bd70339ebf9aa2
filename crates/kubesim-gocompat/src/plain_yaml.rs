//! A parser for the plain block YAML that templates render (kwok's Stage
//! templates, ClusterLoader2's object templates): nested mappings and
//! sequences of plain words, small integers, booleans, escape-free
//! double-quoted strings and flow lists of them, one entry per line, and
//! lines of comment alone. A pod's status patch renders to exactly that,
//! and a general YAML parser spent more time on it than rendering it did.
//! Anything outside that subset (other flow collections, trailing
//! comments, anchors, tags, block scalars, escapes, words a YAML schema
//! might read as something other than a string) makes it give up, and
//! the caller parses the text with the full parser, so the value is
//! always the one the full parser would give.

use serde_json::{Map, Number, Value};

/// `text` as the full YAML parser reads it: through this reader when it
/// is in the subset, else through the parser (whose error is returned).
pub fn read(text: &str) -> Result<Value, String> {
    match parse(text) {
        Some(v) => Ok(v),
        None => serde_saphyr::from_str(text).map_err(|e| e.to_string()),
    }
}

/// `text` as a value, or None when it is not in the subset.
pub fn parse(text: &str) -> Option<Value> {
    let mut lines = Vec::new();
    for line in text.lines() {
        let content = line.trim_start_matches(' ');
        if content.trim().is_empty() {
            continue;
        }
        // A line of comment alone is nothing (the subset has no block
        // scalars, in which it would be text: their `|` or `>` is refused).
        if content.starts_with('#') {
            continue;
        }
        // Tabs, trailing comments and document markers are left to the
        // full parser.
        if content.starts_with('\t')
            || content.starts_with("---")
            || content.starts_with("...")
            || line.contains(" #")
        {
            return None;
        }
        lines.push((line.len() - content.len(), content.trim_end()));
    }
    let first = *lines.first()?;
    let mut p = Parser { lines, at: 0 };
    let v = p.block(first.0)?;
    (p.at == p.lines.len()).then_some(v)
}

struct Parser<'a> {
    /// (indentation, content without it) of every non-empty line.
    lines: Vec<(usize, &'a str)>,
    at: usize,
}

fn is_item(content: &str) -> bool {
    content == "-" || content.starts_with("- ")
}

impl<'a> Parser<'a> {
    /// The mapping or sequence starting at the current line, indented by
    /// `indent`.
    fn block(&mut self, indent: usize) -> Option<Value> {
        let &(at, content) = self.lines.get(self.at)?;
        if at != indent {
            return None;
        }
        if is_item(content) {
            self.sequence(indent)
        } else {
            self.mapping(indent)
        }
    }

    fn sequence(&mut self, indent: usize) -> Option<Value> {
        let mut items = Vec::new();
        while let Some(&(at, content)) = self.lines.get(self.at) {
            if at < indent || (at == indent && !is_item(content)) {
                break;
            }
            if at > indent {
                return None;
            }
            let rest = content.strip_prefix("- ")?;
            let inner = rest.trim_start_matches(' ');
            if inner.is_empty() || is_item(inner) {
                return None;
            }
            if split_entry(inner).is_some() {
                // `- key: value` opens a mapping whose keys line up with
                // `key`: read the line as if it stood there alone.
                let column = indent + 2 + (rest.len() - inner.len());
                self.lines[self.at] = (column, inner);
                items.push(self.mapping(column)?);
            } else {
                items.push(scalar(inner)?);
                self.at += 1;
            }
        }
        Some(Value::Array(items))
    }

    fn mapping(&mut self, indent: usize) -> Option<Value> {
        let mut map = Map::new();
        while let Some(&(at, content)) = self.lines.get(self.at) {
            if at < indent {
                break;
            }
            if at > indent || is_item(content) {
                return None;
            }
            let (key, rest) = split_entry(content)?;
            self.at += 1;
            let value = if rest.is_empty() {
                match self.lines.get(self.at) {
                    Some(&(next, _)) if next > indent => self.block(next)?,
                    // A sequence may sit at its key's own indentation.
                    Some(&(next, c)) if next == indent && is_item(c) => self.sequence(indent)?,
                    _ => Value::Null,
                }
            } else {
                scalar(rest)?
            };
            if map.insert(key.to_string(), value).is_some() {
                return None;
            }
        }
        Some(Value::Object(map))
    }
}

/// `key: value` (value possibly empty) with a plain key.
fn split_entry(content: &str) -> Option<(&str, &str)> {
    let end = content
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')))
        .unwrap_or(content.len());
    let (key, rest) = content.split_at(end);
    let rest = rest.strip_prefix(':')?;
    if !rest.is_empty() && !rest.starts_with(' ') {
        return None;
    }
    if !key.starts_with(|c: char| c.is_ascii_alphabetic()) || special_word(key) {
        return None;
    }
    Some((key, rest.trim_start_matches(' ')))
}

/// Words some YAML schema reads as null, a boolean or a number.
fn special_word(w: &str) -> bool {
    matches!(
        w.to_ascii_lowercase().as_str(),
        "null" | "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n" | "nan" | "inf"
    )
}

/// An escape-free double-quoted string.
fn quoted(s: &str) -> Option<Value> {
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains(['"', '\\']) {
        return None;
    }
    Some(Value::String(inner.to_string()))
}

/// A flow sequence of escape-free double-quoted strings (`command: ["sh",
/// "-c", "sleep 1"]`), the one flow collection templates commonly render.
fn quoted_list(s: &str) -> Option<Value> {
    let mut rest = s.strip_prefix('[')?.strip_suffix(']')?.trim_matches(' ');
    let mut items = Vec::new();
    while !rest.is_empty() {
        let body = rest.strip_prefix('"')?;
        let end = body.find('"')?;
        items.push(quoted(&rest[..end + 2])?);
        rest = body[end + 1..].trim_start_matches(' ');
        if let Some(next) = rest.strip_prefix(',') {
            rest = next.trim_start_matches(' ');
            // No item after the last comma: left to the full parser.
            if rest.is_empty() {
                return None;
            }
        } else if !rest.is_empty() {
            return None;
        }
    }
    Some(Value::Array(items))
}

/// A value written after `key: ` or `- `.
fn scalar(s: &str) -> Option<Value> {
    if s.starts_with('"') {
        return quoted(s);
    }
    if s.starts_with('[') {
        return quoted_list(s);
    }
    match s {
        "true" => return Some(Value::Bool(true)),
        "false" => return Some(Value::Bool(false)),
        _ => {}
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        // Leading zeros are octal or strings depending on the schema.
        if s.len() > 1 && s.starts_with('0') || s.len() > 18 {
            return None;
        }
        return s
            .parse::<u64>()
            .ok()
            .map(|n| Value::Number(Number::from(n)));
    }
    // A quantity with a unit (`64Gi`, `100m`, as node capacities render):
    // no schema reads digits then letters as anything but a string, save
    // hexadecimal, octal and binary prefixes and exponents, refused here.
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let unit = &s[digits..];
    if digits > 0
        && !unit.is_empty()
        && unit.bytes().all(|b| b.is_ascii_alphabetic())
        && !unit.starts_with(['x', 'X', 'o', 'O', 'b', 'B', 'e', 'E'])
    {
        return Some(Value::String(s.to_string()));
    }
    // A word that starts with a letter is a string in every schema, save
    // the special words; `.`, `/`, `-` and inner colons (image references,
    // label values, DNS names) do not change that.
    let word = s.starts_with(|c: char| c.is_ascii_alphabetic())
        && !s.ends_with(':')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'/' | b'-' | b'_' | b':'));
    (word && !special_word(s)).then(|| Value::String(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn read_takes_what_the_subset_leaves_to_the_full_parser() {
        // A flow mapping is outside the subset.
        let text = "a: {b: 1}\nc: [x, 2]\n";
        assert!(parse(text).is_none());
        assert_eq!(read(text).unwrap(), full(text));
        assert_eq!(read("a: 1\n").unwrap(), json!({"a": 1}));
        assert!(read("a: [unclosed\n").is_err());
    }

    fn full(text: &str) -> Value {
        serde_saphyr::from_str(text).unwrap()
    }

    /// The subset gives what the full parser gives.
    fn same(text: &str) {
        let fast = parse(text).unwrap_or_else(|| panic!("not in the subset: {text}"));
        assert_eq!(fast, full(text), "{text}");
        assert_eq!(
            fast.to_string(),
            full(text).to_string(),
            "key order: {text}"
        );
    }

    #[test]
    fn reads_what_status_templates_render() {
        same(concat!(
            "conditions:\n",
            "- type: Initialized\n",
            "  status: \"True\"\n",
            "  lastTransitionTime: \"2026-01-01T00:00:00Z\"\n",
            "- type: Ready\n",
            "  status: \"True\"\n",
            "containerStatuses:\n",
            "- name: \"c\"\n",
            "  image: \"busybox:1\"\n",
            "  ready: true\n",
            "  started: false\n",
            "  restartCount: 0\n",
            "  state:\n",
            "    running:\n",
            "      startedAt: \"x\"\n",
            "hostIPs:\n",
            "- ip: \"10.0.0.1\"\n",
            "phase: Running\n",
            "startTime: \"2026-01-01T00:00:00Z\"\n",
        ));
        same("a:\n  b:\n    - 1\n    - two\n  c: 12\nd:\n");
        same("- x\n- k: 1\n  z:\n  - w\n");
        same("key.with/slash-and_dash: v\n");
        same("memory: 64Gi\ncpu: 100m\npods: 1M\n");
        same("image: registry.k8s.io/pause:3.9\nhost: node-1.example.com\nk: a_b::c\n");
        same("# a comment\na:\n  # another\n  command: [\"/bin/sh\", \"-c\", \"sleep 1, 2\"]\n  e: []\n  f: [ \"x\" ]\n");
    }

    #[test]
    fn leaves_everything_else_to_the_full_parser() {
        for text in [
            "a: [1, 2]",
            "a: [\"x\",]",
            "a: [\"x\" \"y\"]",
            "a: [\"x\", y]",
            "a: [\"x\\\"\"]",
            "a: [\"x\"",
            "a: [[\"x\"]]",
            "a: {b: 1}",
            "a: 1 # comment",
            "a: \"x\\ny\"",
            "a: yes",
            "a: Null",
            "a: 007",
            "a: -1",
            "a: 1.5",
            "a: 0xff",
            "a: 0b1",
            "a: 0o7",
            "a: 1e",
            "a: 1Gi2",
            "a: &x 1",
            "a: |\n  text",
            "a: b c",
            "a: b:",
            "a: b: c",
            "a: b#c",
            "a: 1\na: 2",
            "\"a\": 1",
            "a:\n\t- 1",
            "---\na: 1",
            "a: 1\n b: 2",
            "- - 1",
            "plain",
        ] {
            assert_eq!(parse(text), None, "{text}");
        }
        // Empty values are null, as in YAML.
        assert_eq!(parse("a:\nb: 1"), Some(json!({"a": null, "b": 1})));
        assert_eq!(full("a:\nb: 1"), json!({"a": null, "b": 1}));
    }

    proptest::proptest! {
        /// Whatever text the subset accepts, it reads as the full parser
        /// does (values and key order). The lines are drawn from pieces
        /// that templates render, plus the near misses the subset must
        /// refuse, at random indentations.
        #[test]
        fn accepted_text_reads_as_the_full_parser_reads_it(
            lines in proptest::collection::vec(
                (0usize..4, proptest::sample::select(vec![
                    "a:", "b: 1", "c: x", "- d", "- e: 2", "f: \"q\"", "g: true",
                    "h: -1", "i: 1.5", "j: yes", "k: null", "- ", "l: [1]", "m: a b",
                    "n: 007", "o: \"x\\ny\"", "p: ~", "a: 2", "- - 3", "q:  r",
                    "s: 12345678901234567890", "t: \"\"", "u: 'v'", "w: x:y",
                    "x: 64Gi", "y: 0xA", "z: 1e3", "z: 0b1", "y: 1E", "x: 12Mi3",
                    "v: a.b/c-d", "v: img:1.0", "v: a:", "v: y.1", "v: No:", "v: n/a",
                    "v: True.x", "v: a::b", "v: x-", "v: 1.0:a",
                    "# c", "  # c", "l: []", "l: [\"a\"]", "l: [\"a\", \"b,c\"]",
                    "l: [ \"a\" , \"\" ]", "l: [\"a\",]", "l: [\"a\" \"b\"]", "l: [a]",
                    "l: [\"a\"] # c", "l: [\"#\"]", "l: [\"x\\\"\"]", "l: [\"a\", [\"b\"]]",
                ])),
                1..10,
            )
        ) {
            let text: String = lines
                .iter()
                .map(|(indent, l)| format!("{}{l}\n", " ".repeat(indent * 2)))
                .collect();
            if let Some(fast) = parse(&text) {
                let full: Result<Value, _> = serde_saphyr::from_str(&text);
                proptest::prop_assert!(full.is_ok(), "accepted what the full parser refuses: {text:?}");
                let full = full.unwrap();
                proptest::prop_assert_eq!(&fast, &full, "{:?}", text);
                proptest::prop_assert_eq!(fast.to_string(), full.to_string(), "key order: {:?}", text);
            }
        }
    }
}
