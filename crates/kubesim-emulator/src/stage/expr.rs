//! The two expression languages of kwok's Stage API: jq (gojq in kwok,
//! jaq here) and, since 2025, CEL with the object as `self`.

use serde_json::Value;

use super::jq::{Input, Jq};
use crate::usage::cel::{eval_self, scalar_json, Expr};

/// A `*From` expression (weightFrom, durationFrom, ...).
#[derive(Debug)]
pub enum Expression {
    Jq(Jq),
    Cel(Expr),
}

impl Expression {
    /// The first value that is not null; None when there is none or the
    /// expression fails (kwok then falls back to the fixed value).
    pub fn first(&self, input: &Input) -> Option<Value> {
        match self {
            Expression::Jq(j) => j.first(input),
            Expression::Cel(e) => eval_self(e, input.cel())
                .ok()
                .and_then(|v| scalar_json(&v))
                .filter(|v| !v.is_null()),
        }
    }
}

/// Whether a CEL selector requirement holds for the object: it must
/// evaluate to `true`; anything else, an error included, does not match.
pub fn cel_holds(expr: &Expr, input: &Input) -> bool {
    matches!(eval_self(expr, input.cel()), Ok(cel::Value::Bool(true)))
}
