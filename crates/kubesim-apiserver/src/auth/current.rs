//! The identity behind the request being served, as upstream carries it
//! in the request's context: the service layer reads it where a verb's
//! meaning depends on who asks (the self reviews, RBAC's escalation check)
//! without every call passing it along.

use std::future::Future;
use std::sync::Arc;

use super::UserInfo;

/// Who sent the request, and whether RBAC is enforced for it.
#[derive(Debug, Clone)]
pub struct RequestAuth {
    pub user: Arc<UserInfo>,
    /// False when the server allows everything (`--authorization-mode
    /// AlwaysAllow`): the identity is still known, but never refused.
    pub enforce: bool,
}

tokio::task_local! {
    static CURRENT: RequestAuth;
}

/// Runs `f` as a request from `auth`.
pub async fn scoped<F: Future>(auth: RequestAuth, f: F) -> F::Output {
    CURRENT.scope(auth, f).await
}

/// The identity of the request being served; None for calls from
/// components in this process, which are trusted.
pub fn current() -> Option<RequestAuth> {
    CURRENT.try_with(Clone::clone).ok()
}
