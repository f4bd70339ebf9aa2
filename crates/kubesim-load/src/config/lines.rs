//! Where a key sits in a block-style YAML text, so that errors found after
//! decoding (unknown keys, bad values) can name their line. YAML parsers
//! give locations only for syntax errors; test configs are block YAML, so
//! following indentation is enough to map a path to its line.

/// One step of a path: a map key or a list index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// `steps[2].phases[0].tuningSet`.
pub fn show(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// The path of every key line of a YAML text.
pub struct LineIndex {
    lines: Vec<(usize, Vec<Seg>)>,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut out = Vec::new();
        // (column, segment) of the enclosing keys and list items.
        let mut stack: Vec<(usize, Seg)> = Vec::new();
        // A block scalar (`|`, `>`) swallows lines indented past its key.
        let mut block_at: Option<usize> = None;
        for (n, raw) in text.lines().enumerate() {
            let content = raw.trim_start();
            if content.is_empty() || content.starts_with('#') || content == "---" {
                continue;
            }
            let mut col = raw.len() - content.len();
            if let Some(b) = block_at {
                if col > b {
                    continue;
                }
                block_at = None;
            }
            let mut rest = content;
            while rest == "-" || rest.starts_with("- ") {
                let prev = pop_item(&mut stack, col);
                stack.push((col, Seg::Index(prev.map_or(0, |i| i + 1))));
                out.push((n + 1, segs(&stack)));
                let after = rest[1..].trim_start();
                col += rest.len() - after.len();
                rest = after;
            }
            let Some(key) = key_of(rest) else {
                continue;
            };
            while stack.last().is_some_and(|(c, _)| *c >= col) {
                stack.pop();
            }
            stack.push((col, Seg::Key(key.clone())));
            out.push((n + 1, segs(&stack)));
            let value = rest[rest.find(':').map_or(rest.len(), |i| i + 1)..].trim();
            if value.starts_with('|') || value.starts_with('>') {
                block_at = Some(col);
            }
        }
        LineIndex { lines: out }
    }

    /// The line of `path`, or of its longest prefix that has one.
    pub fn line_of(&self, path: &[Seg]) -> Option<usize> {
        for len in (1..=path.len()).rev() {
            let want = &path[..len];
            if let Some((n, _)) = self.lines.iter().find(|(_, p)| p == want) {
                return Some(*n);
            }
        }
        None
    }
}

/// Pops down to a list item at `col` (returning its index) or to the
/// nearest enclosing entry left of it.
fn pop_item(stack: &mut Vec<(usize, Seg)>, col: usize) -> Option<usize> {
    while let Some((c, seg)) = stack.last() {
        if *c > col {
            stack.pop();
            continue;
        }
        if *c == col {
            if let Seg::Index(i) = seg {
                let i = *i;
                stack.pop();
                return Some(i);
            }
        }
        break;
    }
    None
}

fn segs(stack: &[(usize, Seg)]) -> Vec<Seg> {
    stack.iter().map(|(_, s)| s.clone()).collect()
}

/// The key of a `key: value` line (quotes removed), if it is one.
fn key_of(s: &str) -> Option<String> {
    let (k, after) = if let Some(q) = s.strip_prefix('"') {
        let end = q.find('"')?;
        (&q[..end], &q[end + 1..])
    } else if let Some(q) = s.strip_prefix('\'') {
        let end = q.find('\'')?;
        (&q[..end], &q[end + 1..])
    } else {
        let i = s.find(':')?;
        (&s[..i], &s[i..])
    };
    let after = after.trim_start();
    if !(after == ":" || after.starts_with(": ") || after.starts_with(":\t")) {
        return None;
    }
    if k.is_empty() || k.contains(['{', '}', '[', ']', ',']) {
        return None;
    }
    Some(k.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> Seg {
        Seg::Key(s.into())
    }

    #[test]
    fn finds_keys_in_nested_lists_at_the_same_indent() {
        let text = "name: t\nsteps:\n- name: a\n  measurements:\n  - Identifier: x\n    Params:\n      action: start\n- name: b\n  phases:\n  - tuningSet: u\n    objectBundle:\n    - basename: p\n";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_of(&[k("name")]), Some(1));
        assert_eq!(
            idx.line_of(&[k("steps"), Seg::Index(0), k("name")]),
            Some(3)
        );
        assert_eq!(
            idx.line_of(&[
                k("steps"),
                Seg::Index(0),
                k("measurements"),
                Seg::Index(0),
                k("Params"),
                k("action")
            ]),
            Some(7)
        );
        assert_eq!(
            idx.line_of(&[k("steps"), Seg::Index(1), k("name")]),
            Some(8)
        );
        assert_eq!(
            idx.line_of(&[
                k("steps"),
                Seg::Index(1),
                k("phases"),
                Seg::Index(0),
                k("objectBundle"),
                Seg::Index(0),
                k("basename")
            ]),
            Some(12)
        );
        // A missing key falls back to its parent.
        assert_eq!(
            idx.line_of(&[
                k("steps"),
                Seg::Index(1),
                k("phases"),
                Seg::Index(0),
                k("nope")
            ]),
            Some(10)
        );
    }

    #[test]
    fn block_scalars_and_comments_are_skipped() {
        let text = "# c\na: |\n  x: 1\n  y: 2\nb: 3\n";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_of(&[k("b")]), Some(5));
        assert_eq!(idx.line_of(&[k("x")]), None);
    }

    #[test]
    fn never_panics_on_odd_text() {
        for t in [
            "- - - a: b",
            ":",
            "\"a",
            "- \n  - x: \n:::",
            "a: [b, {c: d}]",
        ] {
            let _ = LineIndex::new(t).line_of(&[k("a")]);
        }
    }
}
