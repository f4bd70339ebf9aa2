//! Object templates of phases: their kinds (read with every `{{...}}`
//! removed, so `apiVersion` and `kind` must be literal, as upstream
//! requires) and their rendering into objects.

use std::path::Path;

use serde_json::{Map, Value};

use crate::template::Renderer;

/// Removes `{{ ... }}` actions, leaving the literal text.
pub fn strip_actions(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        match rest[i..].find("}}") {
            Some(j) => rest = &rest[i + j + 2..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Splits a multi-document YAML text on `---` lines.
pub fn documents(text: &str) -> Vec<String> {
    let mut docs = vec![String::new()];
    for line in text.lines() {
        if line.trim_end() == "---" || line.starts_with("--- ") {
            docs.push(String::new());
            continue;
        }
        let d = docs.last_mut().expect("one document at least");
        d.push_str(line);
        d.push('\n');
    }
    docs.into_iter().filter(|d| !only_comments(d)).collect()
}

fn only_comments(doc: &str) -> bool {
    doc.lines().all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#')
    })
}

/// The `(apiVersion, kind)` of every document of a template.
pub fn template_kinds(path: &Path) -> Result<Vec<(String, String)>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let mut out = Vec::new();
    for doc in documents(&strip_actions(&text)) {
        let mut api_version = None;
        let mut kind = None;
        // Only top-level keys matter; the rest may not even be YAML once
        // the actions are gone.
        for line in doc.lines() {
            if let Some(v) = line.strip_prefix("apiVersion:") {
                api_version = Some(unquote(v));
            } else if let Some(v) = line.strip_prefix("kind:") {
                kind = Some(unquote(v));
            }
        }
        match (api_version, kind) {
            (Some(a), Some(k)) if !a.is_empty() && !k.is_empty() => out.push((a, k)),
            _ => {
                return Err(format!(
                    "{}: every document needs a literal apiVersion and kind",
                    path.display()
                ))
            }
        }
    }
    if out.is_empty() {
        return Err(format!("{}: the template has no object", path.display()));
    }
    for (i, a) in out.iter().enumerate() {
        if out[..i].contains(a) {
            return Err(format!(
                "{}: two documents of kind {} {}",
                path.display(),
                a.0,
                a.1
            ));
        }
    }
    Ok(out)
}

fn unquote(v: &str) -> String {
    let v = v.split(" #").next().unwrap_or(v).trim();
    v.trim_matches(|c| c == '"' || c == '\'').to_string()
}

/// Renders a template into its objects (empty documents skipped).
pub fn render_objects(
    renderer: &Renderer,
    path: &Path,
    mapping: Map<String, Value>,
) -> Result<Vec<Value>, String> {
    let text = renderer.render_file(path, &Value::Object(mapping))?;
    let mut out = Vec::new();
    for doc in documents(&text) {
        // Most rendered objects are plain block YAML, read without the
        // full parser.
        let v = kubesim_gocompat::plain_yaml::read(&doc)
            .map_err(|e| format!("{}: rendered object is not YAML: {e}", path.display()))?;
        match v {
            Value::Object(_) => out.push(v),
            Value::Null => {}
            _ => {
                return Err(format!(
                    "{}: a rendered document is not an object",
                    path.display()
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_are_stripped() {
        assert_eq!(
            strip_actions("a: {{.X}}\nb: {{ if .Y }}c{{end}}"),
            "a: \nb: c"
        );
        assert_eq!(strip_actions("x {{ unterminated"), "x ");
    }

    /// Every object template of ClusterLoader2's suite in testdata,
    /// rendered, reads the same through the plain-YAML reader as through
    /// the full parser; and the reader takes most of them.
    #[test]
    fn real_templates_read_as_the_full_parser_reads_them() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/clusterloader2");
        let renderer = Renderer::new(kubesim_runtime::Rng::seeded(1), &root);
        let mapping = serde_json::json!({
            "Name": "obj-1", "Index": 1, "Namespace": "test-ns", "SvcName": "svc",
            "ImageRegistry": "registry.k8s.io", "ReplicasMin": 1, "ReplicasMax": 3,
            "Replicas": 2, "Group": "g", "CpuRequest": "5m", "MemoryRequest": "10M",
        });
        let mut files = Vec::new();
        let mut dirs = vec![root.clone()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "yaml") {
                    files.push(p);
                }
            }
        }
        files.sort();
        let (mut rendered, mut fast) = (0, 0);
        for path in &files {
            let text = std::fs::read_to_string(path).unwrap();
            // Test configs and their modules are not object templates.
            if text.contains("\nsteps:") || text.starts_with("steps:") {
                continue;
            }
            let Ok(out) = renderer.render_file(path, &mapping) else {
                continue;
            };
            for doc in documents(&out) {
                let Ok(full) = serde_saphyr::from_str::<Value>(&doc) else {
                    continue;
                };
                rendered += 1;
                if let Some(v) = kubesim_gocompat::plain_yaml::parse(&doc) {
                    fast += 1;
                    assert_eq!(v, full, "{}", path.display());
                    assert_eq!(v.to_string(), full.to_string(), "{}", path.display());
                }
            }
        }
        assert!(rendered >= 30, "only {rendered} templates rendered");
        assert!(
            2 * fast >= rendered,
            "the plain reader took {fast} of {rendered} rendered templates"
        );
        eprintln!("{fast} of {rendered} rendered templates read without the full parser");
    }

    #[test]
    fn documents_split_and_skip_empty_ones() {
        let d = documents("---\na: 1\n---\n# only a comment\n---\nb: 2\n");
        assert_eq!(d, vec!["a: 1\n".to_string(), "b: 2\n".to_string()]);
    }
}
