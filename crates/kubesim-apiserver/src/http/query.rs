//! Query parameters into request options. Unknown parameters are ignored,
//! as the real server does (`timeout`, `pretty`, an empty `?`, a leading `&`).

use kubesim_core::ApiError;
use kubesim_runtime::{DeleteOptions, FieldValidation, ListOptions, WriteOptions};

use crate::service::logs::LogOptions;

pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    pub fn parse(q: Option<&str>) -> Query {
        let pairs = url::form_urlencoded::parse(q.unwrap_or("").as_bytes())
            .filter(|(k, _)| !k.is_empty())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        Query { pairs }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn flag(&self, key: &str) -> Result<Option<bool>, ApiError> {
        // As upstream: anything but "0" and "false" (any case) is true; the
        // Python client sends "True".
        Ok(self
            .get(key)
            .map(|v| !(v == "0" || v.eq_ignore_ascii_case("false"))))
    }

    pub fn watch(&self) -> Result<bool, ApiError> {
        Ok(self.flag("watch")?.unwrap_or(false))
    }

    fn int(&self, k: &str) -> Result<Option<i64>, ApiError> {
        match self.get(k) {
            None | Some("") => Ok(None),
            Some(v) => v
                .parse::<i64>()
                .map(Some)
                .map_err(|_| ApiError::bad_request(format!("invalid value for {k}: {v:?}"))),
        }
    }

    /// The parameters of `GET pods/<name>/log` (`follow` is accepted: the
    /// emulated log is complete when returned, so the stream just ends).
    pub fn log(&self) -> Result<LogOptions, ApiError> {
        Ok(LogOptions {
            container: self.get("container").map(str::to_string),
            tail_lines: self.int("tailLines")?,
            limit_bytes: self.int("limitBytes")?,
            timestamps: self.flag("timestamps")?.unwrap_or(false),
            previous: self.flag("previous")?.unwrap_or(false),
        })
    }

    pub fn list(&self) -> Result<ListOptions, ApiError> {
        let int = |k: &str| self.int(k);
        let timeout = match int("timeoutSeconds")? {
            Some(t) if t < 0 => {
                return Err(ApiError::bad_request("timeoutSeconds must be non-negative"))
            }
            t => t.map(|t| t as u64),
        };
        Ok(ListOptions {
            label_selector: self.get("labelSelector").map(str::to_string),
            field_selector: self.get("fieldSelector").map(str::to_string),
            limit: int("limit")?,
            continue_token: self.get("continue").map(str::to_string),
            resource_version: self.get("resourceVersion").map(str::to_string),
            resource_version_match: self.get("resourceVersionMatch").map(str::to_string),
            timeout_seconds: timeout,
            allow_bookmarks: self.flag("allowWatchBookmarks")?.unwrap_or(false),
            send_initial_events: self.flag("sendInitialEvents")?,
        })
    }

    fn dry_run(&self) -> Result<bool, ApiError> {
        match self.get("dryRun") {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(v) => Err(ApiError::bad_request(format!(
                "Invalid dryRun value {v:?}: supported values: \"All\""
            ))),
        }
    }

    pub fn write(&self) -> Result<WriteOptions, ApiError> {
        let fv = match self.get("fieldValidation") {
            None | Some("") => None,
            Some("Strict") => Some(FieldValidation::Strict),
            Some("Warn") => Some(FieldValidation::Warn),
            Some("Ignore") => Some(FieldValidation::Ignore),
            Some(v) => {
                return Err(ApiError::bad_request(format!(
                    "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got {v:?}"
                )))
            }
        };
        let manager = self.get("fieldManager").map(str::to_string);
        if let Some(m) = &manager {
            if m.len() > 128 || m.chars().any(|c| c.is_control()) {
                return Err(ApiError::bad_request(
                    "fieldManager must be at most 128 printable characters",
                ));
            }
        }
        Ok(WriteOptions {
            dry_run: self.dry_run()?,
            field_manager: manager,
            field_validation: fv,
            force: self.flag("force")?.unwrap_or(false),
            // A request over HTTP is always answered in full.
            version_only: false,
        })
    }

    /// Delete options from the query, overlaid by those from the body.
    pub fn delete(&self, body: Option<&serde_json::Value>) -> Result<DeleteOptions, ApiError> {
        let mut o = DeleteOptions {
            grace_period_seconds: match self.get("gracePeriodSeconds") {
                None | Some("") => None,
                Some(v) => Some(v.parse().map_err(|_| {
                    ApiError::bad_request(format!("invalid gracePeriodSeconds {v:?}"))
                })?),
            },
            propagation_policy: self.get("propagationPolicy").map(str::to_string),
            orphan_dependents: self.flag("orphanDependents")?,
            dry_run: self.dry_run()?,
            ..DeleteOptions::default()
        };
        if let Some(b) = body {
            if let Some(g) = b.get("gracePeriodSeconds") {
                o.grace_period_seconds = Some(g.as_i64().ok_or_else(|| {
                    ApiError::bad_request("gracePeriodSeconds must be an integer")
                })?);
            }
            if let Some(p) = b.get("propagationPolicy").and_then(|p| p.as_str()) {
                o.propagation_policy = Some(p.to_string());
            }
            if let Some(p) = b.get("orphanDependents").and_then(|p| p.as_bool()) {
                o.orphan_dependents = Some(p);
            }
            if let Some(pre) = b.get("preconditions") {
                o.precondition_uid = pre.get("uid").and_then(|v| v.as_str()).map(str::to_string);
                o.precondition_resource_version = pre
                    .get("resourceVersion")
                    .and_then(|v| v.as_str())
                    .map(str::to_string);
            }
            if let Some(d) = b.get("dryRun").and_then(|d| d.as_array()) {
                if d.iter().any(|x| x.as_str() == Some("All")) {
                    o.dry_run = true;
                }
            }
        }
        Ok(o)
    }
}
