//! Decoding of rendered YAML into the config types the way ClusterLoader2
//! does (keys matched case-insensitively, durations as Go strings), with
//! every error and unknown key reported as `file:line: path: message`.

use std::cell::RefCell;
use std::time::Duration;

use serde_json::{Map, Value};

use super::lines::{show, LineIndex, Seg};

/// What to do with keys the schema does not have.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Validation {
    /// Refuse the config (the default: a typo must not pass silently).
    #[default]
    Strict,
    /// Log a warning and go on, as ClusterLoader2 itself does.
    Warn,
    Ignore,
}

impl std::str::FromStr for Validation {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "strict" => Ok(Validation::Strict),
            "warn" => Ok(Validation::Warn),
            "ignore" => Ok(Validation::Ignore),
            _ => Err(format!("{s:?} is not one of Strict, Warn, Ignore")),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}: {}", self.file, l, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// A rendered document being decoded.
pub struct Doc {
    pub file: String,
    lines: LineIndex,
    validation: Validation,
    pub warnings: RefCell<Vec<String>>,
}

impl Doc {
    pub fn new(file: &str, text: &str, validation: Validation) -> Self {
        Doc {
            file: file.to_string(),
            lines: LineIndex::new(text),
            validation,
            warnings: RefCell::new(Vec::new()),
        }
    }

    pub fn error(&self, path: &[Seg], message: impl std::fmt::Display) -> ConfigError {
        let at = show(path);
        ConfigError {
            file: self.file.clone(),
            line: self.lines.line_of(path),
            message: if at.is_empty() {
                message.to_string()
            } else {
                format!("{at}: {message}")
            },
        }
    }

    /// The top-level map of the document.
    pub fn root<'a>(&'a self, v: &'a Value) -> Result<Obj<'a>> {
        Obj::new(self, Vec::new(), v)
    }
}

pub type Result<T> = std::result::Result<T, ConfigError>;

/// A YAML map being read field by field.
pub struct Obj<'a> {
    doc: &'a Doc,
    pub path: Vec<Seg>,
    map: &'a Map<String, Value>,
    used: Vec<String>,
}

fn child(path: &[Seg], seg: Seg) -> Vec<Seg> {
    let mut p = path.to_vec();
    p.push(seg);
    p
}

impl<'a> Obj<'a> {
    pub fn new(doc: &'a Doc, path: Vec<Seg>, v: &'a Value) -> Result<Self> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        let map = match v {
            Value::Object(m) => m,
            Value::Null => EMPTY.get_or_init(Map::new),
            other => return Err(doc.error(&path, format!("expected a map, got {}", kind(other)))),
        };
        Ok(Obj {
            doc,
            path,
            map,
            used: Vec::new(),
        })
    }

    pub fn error(&self, message: impl std::fmt::Display) -> ConfigError {
        self.doc.error(&self.path, message)
    }

    /// The value of `name` matched without regard to case, as Go's
    /// encoding/json does; null counts as absent.
    pub fn get(&mut self, name: &str) -> Option<(&'a Value, Vec<Seg>)> {
        let (k, v) = self
            .map
            .iter()
            .find(|(k, _)| k.as_str() == name)
            .or_else(|| self.map.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)))?;
        self.used.push(k.clone());
        if v.is_null() {
            return None;
        }
        Some((v, child(&self.path, Seg::Key(k.clone()))))
    }

    pub fn string(&mut self, name: &str) -> Result<Option<String>> {
        match self.get(name) {
            None => Ok(None),
            Some((Value::String(s), _)) => Ok(Some(s.clone())),
            // YAML turns `name: 123` into a number; Go would refuse it too.
            Some((v, p)) => Err(self
                .doc
                .error(&p, format!("expected a string, got {}", kind(v)))),
        }
    }

    pub fn int(&mut self, name: &str) -> Result<Option<i64>> {
        match self.get(name) {
            None => Ok(None),
            Some((Value::Number(n), p)) => match n.as_i64() {
                Some(i) => Ok(Some(i)),
                None => Err(self.doc.error(&p, format!("{n} is not an integer"))),
            },
            Some((v, p)) => Err(self
                .doc
                .error(&p, format!("expected an integer, got {}", kind(v)))),
        }
    }

    pub fn float(&mut self, name: &str) -> Result<Option<f64>> {
        match self.get(name) {
            None => Ok(None),
            Some((Value::Number(n), _)) => Ok(n.as_f64()),
            Some((v, p)) => Err(self
                .doc
                .error(&p, format!("expected a number, got {}", kind(v)))),
        }
    }

    pub fn bool(&mut self, name: &str) -> Result<Option<bool>> {
        match self.get(name) {
            None => Ok(None),
            Some((Value::Bool(b), _)) => Ok(Some(*b)),
            Some((v, p)) => Err(self
                .doc
                .error(&p, format!("expected true or false, got {}", kind(v)))),
        }
    }

    /// A Go duration string (`"30s"`); ClusterLoader2 refuses numbers.
    pub fn duration(&mut self, name: &str) -> Result<Option<Duration>> {
        match self.get(name) {
            None => Ok(None),
            Some((Value::String(s), p)) => kubesim_gocompat::duration::parse_std(s)
                .map(Some)
                .map_err(|e| self.doc.error(&p, e.to_string())),
            Some((v, p)) => Err(self.doc.error(
                &p,
                format!(
                    "expected a duration string such as \"30s\", got {}",
                    kind(v)
                ),
            )),
        }
    }

    /// A free-form map (parameters, fill maps), kept as it is.
    pub fn map(&mut self, name: &str) -> Result<Map<String, Value>> {
        match self.get(name) {
            None => Ok(Map::new()),
            Some((Value::Object(m), _)) => Ok(m.clone()),
            Some((v, p)) => Err(self
                .doc
                .error(&p, format!("expected a map, got {}", kind(v)))),
        }
    }

    pub fn obj(&mut self, name: &str) -> Result<Option<Obj<'a>>> {
        match self.get(name) {
            None => Ok(None),
            Some((v, p)) => Obj::new(self.doc, p, v).map(Some),
        }
    }

    /// The items of a list, each with its path.
    pub fn list(&mut self, name: &str) -> Result<Vec<(&'a Value, Vec<Seg>)>> {
        match self.get(name) {
            None => Ok(Vec::new()),
            Some((Value::Array(a), p)) => Ok(a
                .iter()
                .enumerate()
                .map(|(i, v)| (v, child(&p, Seg::Index(i))))
                .collect()),
            Some((v, p)) => Err(self
                .doc
                .error(&p, format!("expected a list, got {}", kind(v)))),
        }
    }

    pub fn objs(&mut self, name: &str) -> Result<Vec<Obj<'a>>> {
        self.list(name)?
            .into_iter()
            .map(|(v, p)| Obj::new(self.doc, p, v))
            .collect()
    }

    pub fn strings(&mut self, name: &str) -> Result<Vec<String>> {
        self.list(name)?
            .into_iter()
            .map(|(v, p)| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(self
                    .doc
                    .error(&p, format!("expected a string, got {}", kind(other)))),
            })
            .collect()
    }

    /// Reports the keys no `get` asked for.
    pub fn finish(self) -> Result<()> {
        for k in self.map.keys() {
            if self.used.iter().any(|u| u == k) {
                continue;
            }
            let p = child(&self.path, Seg::Key(k.clone()));
            let err = self.doc.error(&p, "unknown field");
            match self.doc.validation {
                Validation::Strict => return Err(err),
                Validation::Warn => self.doc.warnings.borrow_mut().push(err.to_string()),
                Validation::Ignore => {}
            }
        }
        Ok(())
    }
}

pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}
