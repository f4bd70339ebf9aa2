//! The layers every request passes before its handler, in upstream's
//! order: audit outermost (so refusals are logged too), then the in-flight
//! limits.

use std::future::Future;
use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;

use super::audited::Audit;
use super::request_info::RequestInfo;
use super::{identity, overload, App};

pub(crate) async fn serve<F, Fut>(app: Arc<App>, req: Request, handler: F) -> Response
where
    F: FnOnce(Arc<App>, Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let user = identity::request_user(&app, &req);
    // The common case stays cheap: nothing to log and a caller the limits
    // do not apply to.
    if app.audit.is_none() && (user.is_master() || app.inflight.is_unlimited()) {
        return handler(app, req).await;
    }
    let info = RequestInfo::of(req.method(), req.uri().path(), req.uri().query());
    let mut audit = Audit::begin(&app, &info, &user, &req);
    let req = match audit.as_mut() {
        Some(a) => match a.capture_request(req).await {
            Ok(r) => r,
            Err(refused) => return finish(audit, refused).await,
        },
        None => req,
    };
    let resp = match overload::admit(&app, &info, &user).await {
        Ok(slot) => {
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
