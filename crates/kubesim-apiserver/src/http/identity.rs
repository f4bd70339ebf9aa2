//! Who sent a request: authenticated and impersonated once (see
//! `auth::authn` and `auth::impersonate`), before the audit log and the
//! in-flight limits, which both need the user, and carried to the
//! handler in the request's extensions.

use std::sync::Arc;

use axum::extract::Request;
use kubesim_core::ApiError;

use super::App;
use crate::auth::authn::PeerIdentity;
use crate::auth::UserInfo;

/// The user a request was authenticated as, put on the request.
#[derive(Clone)]
pub(crate) struct Authenticated(pub Arc<UserInfo>);

/// The user `req` acts as: its credentials' user, or whom it impersonates.
pub(crate) fn authenticate(app: &App, req: &Request) -> Result<UserInfo, ApiError> {
    let peer = req.extensions().get::<PeerIdentity>();
    let user = app.server.authenticate(&app.auth, req.headers(), peer)?;
    app.server.impersonate(user, req.headers())
}

/// The user put on `req` by [`authenticate`]'s caller, or found now.
pub(crate) fn user_of(app: &App, req: &Request) -> Result<Arc<UserInfo>, ApiError> {
    match req.extensions().get::<Authenticated>() {
        Some(a) => Ok(a.0.clone()),
        None => authenticate(app, req).map(Arc::new),
    }
}
