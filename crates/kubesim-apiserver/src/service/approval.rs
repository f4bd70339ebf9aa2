//! `certificatesigningrequests/<name>/approval`: how `kubectl certificate
//! approve|deny` and the approving controllers write a request's
//! Approved and Denied conditions. The write changes the conditions only;
//! spec, certificate and metadata stay as stored, and its validation is
//! the object's (Approved and Denied exclude each other).

use kubesim_core::patch::{PatchBody, PatchType};
use kubesim_core::{meta, ApiError, ResourceInfo};
use kubesim_runtime::WriteOptions;
use serde_json::Value;

use super::write::{manager, Part, WriteResult};
use super::{Caller, Server};

/// What an approval write sends.
pub enum ApprovalChange<'a> {
    /// PUT: the whole object, whose conditions are taken.
    Replace(Value),
    /// PATCH: applied to the stored object, whose resulting conditions are taken.
    Patch(PatchType, &'a [u8]),
}

/// `cur` with the conditions of `from` (none when `from` has none).
fn with_conditions(cur: &Value, from: &Value) -> Value {
    let mut out = cur.clone();
    let conditions = from
        .get("status")
        .and_then(|s| s.get("conditions"))
        .filter(|c| !c.is_null())
        .cloned();
    if !out.get("status").is_some_and(Value::is_object) {
        out["status"] = Value::Object(Default::default());
    }
    if let Some(status) = out.get_mut("status").and_then(Value::as_object_mut) {
        match conditions {
            Some(c) => {
                status.insert("conditions".into(), c);
            }
            None => {
                status.remove("conditions");
            }
        }
    }
    out
}

impl Server {
    pub async fn write_approval(
        &self,
        resource: &ResourceInfo,
        name: &str,
        change: ApprovalChange<'_>,
        opts: &WriteOptions,
        caller: &Caller,
    ) -> Result<WriteResult, ApiError> {
        if !resource.has_subresource("approval") {
            return Err(ApiError::path_not_found().with_details("", &resource.group, "approval"));
        }
        let mgr = manager(opts, caller);
        let (body, precondition) = match &change {
            ApprovalChange::Replace(body) => {
                let mut body = body.clone();
                self.check_type(resource, &mut body)?;
                let body_name = meta::name(&body);
                if !body_name.is_empty() && body_name != name {
                    return Err(ApiError::bad_request(format!(
                        "the name of the object ({body_name}) does not match the name on the URL ({name})"
                    )));
                }
                let precondition = !meta::resource_version(&body).is_empty();
                (Some(body), precondition)
            }
            ApprovalChange::Patch(PatchType::Apply, _) => {
                return Err(ApiError::unsupported_media_type(
                    "application/apply-patch+yaml",
                ))
            }
            ApprovalChange::Patch(..) => (None, false),
        };
        // The conditions live in status: the write goes through the status
        // part, which keeps the stored spec and metadata.
        self.update_with(
            resource,
            "",
            name,
            Part::Status,
            opts,
            Some(&mgr),
            precondition,
            false,
            &mut |cur| match (&change, &body) {
                (ApprovalChange::Patch(kind, bytes), _) => {
                    let (patched, _) =
                        self.patched(*kind, resource, cur, PatchBody::Bytes(bytes), opts)?;
                    Ok(with_conditions(cur, &patched))
                }
                (ApprovalChange::Replace(_), Some(body)) => {
                    let mut out = with_conditions(cur, body);
                    // The precondition is the client's resourceVersion.
                    if precondition {
                        meta::metadata_mut(&mut out).insert(
                            "resourceVersion".into(),
                            Value::String(meta::resource_version(body).to_string()),
                        );
                    }
                    Ok(out)
                }
                (ApprovalChange::Replace(_), None) => Ok(cur.clone()),
            },
        )
        .await
    }
}

/// The identity a created CertificateSigningRequest records as its
/// requester: the request's user, as upstream takes it; components in
/// this process ask as the admin.
pub(crate) fn admit_csr(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let user = crate::auth::current()
        .map(|a| a.user.as_ref().clone())
        .unwrap_or_else(crate::auth::UserInfo::admin);
    spec.insert("username".into(), user.name.into());
    spec.insert("groups".into(), user.groups.into());
    if user.uid.is_empty() {
        spec.remove("uid");
    } else {
        spec.insert("uid".into(), user.uid.into());
    }
    if user.extra.is_empty() {
        spec.remove("extra");
    } else {
        spec.insert("extra".into(), serde_json::json!(user.extra));
    }
    // A request starts without conditions or a certificate.
    if let Some(o) = obj.as_object_mut() {
        o.remove("status");
    }
}
