//! Label selectors: the full `labels.Parse` grammar and `metav1.LabelSelector`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::ApiError;

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {}

impl LabelSelector {
    pub fn everything() -> Self {
        LabelSelector {}
    }
    /// Parses the string form (`app=web,tier in (a,b),!x`); 400 on bad input.
    pub fn parse(_s: &str) -> Result<Self, ApiError> {
        Ok(LabelSelector {})
    }
    /// Converts a `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`).
    pub fn from_json(_v: &Value) -> Result<Self, ApiError> {
        Ok(LabelSelector {})
    }
    pub fn is_empty(&self) -> bool {
        true
    }
    pub fn matches<'a>(&self, _get: &dyn Fn(&str) -> Option<&'a str>) -> bool {
        true
    }
    pub fn matches_map(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches(&|k| labels.get(k).map(String::as_str))
    }
}

impl std::fmt::Display for LabelSelector {
    fn fmt(&self, _f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Ok(())
    }
}
