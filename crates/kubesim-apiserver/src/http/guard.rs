//! The layers every request passes before its handler, in upstream's
//! order: audit outermost (so refusals are logged too), then the in-flight
//! limits.

use std::future::Future;
use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;

use super::audited::Audit;
use super::request_info::RequestInfo;
use super::{error_response, identity, overload, App};
use crate::auth::UserInfo;

pub(crate) async fn serve<F, Fut>(app: Arc<App>, req: Request, handler: F) -> Response
where
    F: FnOnce(Arc<App>, Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let mut req = req;
    // Authentication comes first, as upstream's: the audit log and the
    // fair share are per user. A request whose credentials fail is
    // audited with no user, then refused.
    let (user, refused) = match identity::authenticate(&app, &req) {
        Ok(u) => (Arc::new(u), None),
        Err(e) => (Arc::new(UserInfo::default()), Some(e)),
    };
    req.extensions_mut()
        .insert(identity::Authenticated(user.clone()));
    // The common case stays cheap: nothing to log and a caller the limits
    // do not apply to.
    if refused.is_none()
        && app.audit.is_none()
        && (user.is_privileged() || app.inflight.is_unlimited())
    {
        return handler(app, req).await;
    }
    let info = RequestInfo::of(req.method(), req.uri().path(), req.uri().query());
    let mut audit = Audit::begin(&app, &info, &user, &req);
    if let Some(e) = refused {
        return finish(audit, error_response(&e)).await;
    }
    let req = match audit.as_mut() {
        Some(a) => match a.capture_request(req).await {
            Ok(r) => r,
            Err(refused) => return finish(audit, refused).await,
        },
        None => req,
    };
    let resp = match overload::admit(&app, &info, &user).await {
        Ok(slot) => {
            // The handler authorizes from the same classification.
            let mut req = req;
            req.extensions_mut().insert(info);
            let resp = handler(app.clone(), req).await;
            drop(slot);
            resp
        }
        Err(refused) => refused,
    };
    finish(audit, resp).await
}

async fn finish(audit: Option<Audit>, resp: Response) -> Response {
    match audit {
        Some(a) => a.finish(resp).await,
        None => resp,
    }
}
