//! Impersonation: a user with the `impersonate` verb acts as another
//! through the `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`
//! and `Impersonate-Extra-<key>` headers (as `kubectl --as` sends them).
//! Each requested attribute is authorized on its own, as upstream does:
//! users, groups and service accounts in the core group, uids and extra
//! values in `authentication.k8s.io`.

use http::HeaderMap;
use kubesim_core::ApiError;

use super::{Attributes, UserInfo, ANONYMOUS, AUTHENTICATED, UNAUTHENTICATED};
use crate::Server;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA: &str = "impersonate-extra-";

fn values<'a>(headers: &'a HeaderMap, name: &str) -> Result<Vec<&'a str>, ApiError> {
    headers
        .get_all(name)
        .iter()
        .map(|v| {
            v.to_str()
                .map_err(|_| ApiError::bad_request(format!("invalid {name} header")))
        })
        .collect()
}

impl Server {
    /// The user `user` acts as, after any impersonation headers; 403 when
    /// it may not impersonate what it asks for.
    pub fn impersonate(&self, user: UserInfo, headers: &HeaderMap) -> Result<UserInfo, ApiError> {
        let names = values(headers, USER)?;
        let groups = values(headers, GROUP)?;
        let uids = values(headers, UID)?;
        let mut extra: Vec<(String, &str)> = Vec::new();
        for (name, value) in headers {
            if let Some(key) = name.as_str().strip_prefix(EXTRA) {
                let key = percent_encoding::percent_decode_str(key)
                    .decode_utf8_lossy()
                    .to_string();
                let v = value
                    .to_str()
                    .map_err(|_| ApiError::bad_request(format!("invalid {name} header")))?;
                extra.push((key, v));
            }
        }
        let Some(&name) = names.first() else {
            if groups.is_empty() && uids.is_empty() && extra.is_empty() {
                return Ok(user);
            }
            return Err(ApiError::bad_request(
                "requested impersonation of groups, uid or extra without impersonating a user",
            ));
        };
        if names.len() > 1 || uids.len() > 1 {
            return Err(ApiError::bad_request(
                "only one user and one uid may be impersonated",
            ));
        }
        let check = |group: &str, resource: &str, sub: &str, ns: &str, object: &str| {
            let a = Attributes {
                verb: "impersonate".into(),
                resource_request: true,
                group: group.into(),
                resource: resource.into(),
                subresource: sub.into(),
                namespace: ns.into(),
                name: object.into(),
                ..Default::default()
            };
            if self.may(&user, &a) {
                Ok(())
            } else {
                Err(a.forbidden(&user.name))
            }
        };
        let service_account = name
            .strip_prefix("system:serviceaccount:")
            .and_then(|rest| rest.split_once(':'));
        match service_account {
            Some((ns, sa)) => check("", "serviceaccounts", "", ns, sa)?,
            None => check("", "users", "", "", name)?,
        }
        for g in &groups {
            check("", "groups", "", "", g)?;
        }
        for u in &uids {
            check("authentication.k8s.io", "uids", "", "", u)?;
        }
        for (key, v) in &extra {
            check("authentication.k8s.io", "userextras", key, "", v)?;
        }
        let mut out = UserInfo {
            name: name.to_string(),
            uid: uids.first().map(|u| u.to_string()).unwrap_or_default(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        };
        if let (Some((ns, _)), true) = (service_account, out.groups.is_empty()) {
            out.groups = vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{ns}"),
            ];
        }
        let implied = if name == ANONYMOUS {
            UNAUTHENTICATED
        } else {
            AUTHENTICATED
        };
        if !out.groups.iter().any(|g| g == implied) {
            out.groups.push(implied.to_string());
        }
        for (key, v) in extra {
            out.extra.entry(key).or_default().push(v.to_string());
        }
        Ok(out)
    }
}
