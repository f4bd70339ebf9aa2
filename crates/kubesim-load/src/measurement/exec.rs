//! Exec: runs a command on the machine running the test (not in the
//! cluster), as ClusterLoader2 does, e.g. to trigger an external action
//! between steps. `command` is the argument list, `$VAR` and `${VAR}` in it
//! expanded from the environment; up to `retries` attempts (default 1),
//! `backoffDelay` apart (default 1 s), each killed after `timeout`
//! (default 1 h). The output is logged; a command that never succeeds
//! fails the call.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::params::{self, Params};
use crate::report::Summary;

use super::{Ctx, Measurement, MeasurementError};

const METHOD: &str = "Exec";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);
const DEFAULT_BACKOFF: Duration = Duration::from_secs(1);

pub struct Exec;

/// Go's `os.ExpandEnv`: `$NAME`, `${NAME}` and the one-character shell
/// specials (`$1`, `$@`, ...) become the variable's value, empty when
/// unset; a `$` before anything else stays; a bad `${` is dropped.
pub fn expand_env(s: &str, get: &dyn Fn(&str) -> Option<String>) -> String {
    let special = |c: char| "*#$@!?-".contains(c) || c.is_ascii_digit();
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let Some(first) = after.chars().next() else {
            // A trailing "$" stays.
            out.push('$');
            rest = after;
            break;
        };
        if first == '{' {
            match after[1..].find('}') {
                // "${}" is eaten, as Go does.
                Some(0) => rest = &after[2..],
                Some(end) => {
                    out.push_str(&get(&after[1..1 + end]).unwrap_or_default());
                    rest = &after[end + 2..];
                }
                // No closing brace: Go eats the "${" and keeps the rest.
                None => rest = &after[1..],
            }
            continue;
        }
        if special(first) {
            out.push_str(&get(&after[..1]).unwrap_or_default());
            rest = &after[1..];
            continue;
        }
        let len = after
            .char_indices()
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
            .map_or(after.len(), |(j, _)| j);
        if len == 0 {
            out.push('$');
        } else {
            out.push_str(&get(&after[..len]).unwrap_or_default());
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

fn command(p: &Params) -> Result<Vec<String>, MeasurementError> {
    let bad =
        || MeasurementError::failed(format!("{METHOD}: \"command\" must be a list of strings"));
    let list = match p.get("command") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or_else(bad))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad()),
    };
    if list.is_empty() {
        return Err(MeasurementError::failed(format!(
            "{METHOD}: command is a required argument; got an empty list"
        )));
    }
    Ok(list)
}

#[async_trait::async_trait]
impl Measurement for Exec {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        _identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        let timeout = params::duration_or(p, "timeout", DEFAULT_TIMEOUT)?;
        let argv: Vec<String> = command(p)?
            .iter()
            .map(|a| expand_env(a, &|k| std::env::var(k).ok()))
            .collect();
        let retries = params::int_or(p, "retries", 1)?;
        if retries < 1 {
            return Err(MeasurementError::failed(format!(
                "{METHOD}: retries must be >= 1, is {retries}"
            )));
        }
        let backoff = params::duration_or(p, "backoffDelay", DEFAULT_BACKOFF)?;
        let mut last = String::new();
        for attempt in 1..=retries {
            let run = tokio::process::Command::new(&argv[0])
                .args(&argv[1..])
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output();
            match ctx.clock.timeout(timeout, run).await {
                Some(Ok(out)) => {
                    tracing::info!(
                        "{METHOD}: {argv:?} attempt {attempt}: {}\n{}{}",
                        out.status,
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    );
                    if out.status.success() {
                        return Ok(Vec::new());
                    }
                    last = out.status.to_string();
                }
                Some(Err(e)) => last = e.to_string(),
                None => last = format!("timed out after {timeout:?}"),
            }
            if attempt < retries {
                ctx.clock.sleep(backoff).await;
            }
        }
        Err(MeasurementError::failed(format!(
            "{METHOD}: command {argv:?} failed: {last}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expands_like_go() {
        let env = |k: &str| match k {
            "A" => Some("x".to_string()),
            "B_2" => Some("y".to_string()),
            _ => None,
        };
        assert_eq!(expand_env("$A-${B_2}-$C.", &env), "x-y-.");
        assert_eq!(expand_env("no vars", &env), "no vars");
        assert_eq!(expand_env("cost $ 5", &env), "cost $ 5");
        assert_eq!(expand_env("$1A ${} ${A", &env), "A  A");
        assert_eq!(expand_env("end$", &env), "end$");
    }

    #[tokio::test]
    async fn runs_the_command_and_fails_on_a_nonzero_exit() {
        let (ctx, _api) = crate::measurement::test_support::ctx().await;
        let ok = json!({"command": ["true"]}).as_object().cloned().unwrap();
        Exec.execute(&ctx, "e", &ok).await.unwrap();
        let fail = json!({"command": ["false"], "retries": 2, "backoffDelay": "1ms"})
            .as_object()
            .cloned()
            .unwrap();
        let e = Exec.execute(&ctx, "e", &fail).await.unwrap_err();
        assert!(
            e.message.contains("failed: exit status: 1"),
            "{}",
            e.message
        );
        let empty = json!({"command": []}).as_object().cloned().unwrap();
        assert!(Exec.execute(&ctx, "e", &empty).await.is_err());
        let zero = json!({"command": ["true"], "retries": 0})
            .as_object()
            .cloned()
            .unwrap();
        assert!(Exec.execute(&ctx, "e", &zero).await.is_err());
    }
}
