//! What a test runs against: the objects (through the `Api`), discovery
//! (which plural serves a kind) and the API server's own `/metrics`.

use std::sync::Arc;

use kubesim_core::ApiError;
use kubesim_runtime::{Api, ResourceRef};

#[async_trait::async_trait]
pub trait Cluster: Send + Sync {
    fn api(&self) -> Arc<dyn Api>;
    /// The served resource of `kind` in `api_version`, and whether it is
    /// namespaced.
    async fn resolve(&self, api_version: &str, kind: &str)
        -> Result<(ResourceRef, bool), ApiError>;
    /// A GET of a non-resource path such as `/metrics`, as text.
    async fn get_text(&self, path: &str) -> Result<String, ApiError>;
}

/// Any API server a kubeconfig names, kubesim's own included.
pub struct Remote(pub Arc<kubesim_runtime::remote::RemoteApi>);

#[async_trait::async_trait]
impl Cluster for Remote {
    fn api(&self) -> Arc<dyn Api> {
        self.0.clone()
    }
    async fn resolve(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<(ResourceRef, bool), ApiError> {
        self.0.resolve(api_version, kind).await
    }
    async fn get_text(&self, path: &str) -> Result<String, ApiError> {
        self.0.get_text(path).await
    }
}

/// An in-process API server on a simulated clock, for the crate's tests.
#[cfg(test)]
pub mod testing {
    use super::*;
    use kubesim_apiserver::inprocess::InProcess;
    use kubesim_apiserver::Server;
    use kubesim_runtime::{Clock, Rng};
    use kubesim_store::{MemStore, Store};

    pub struct InProcessCluster {
        pub server: Arc<Server>,
        api: Arc<dyn Api>,
    }

    /// Call from a `#[tokio::test(start_paused = true)]` test.
    pub async fn cluster() -> (Arc<InProcessCluster>, Clock) {
        let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
        let epoch = "2026-01-01T00:00:00Z".parse().expect("epoch");
        let clock = Clock::simulated(epoch);
        let server = Server::new(store, clock.clone(), Rng::seeded(1));
        server.bootstrap().await.expect("bootstrap");
        let api: Arc<dyn Api> = Arc::new(InProcess::new(server.clone(), "kubesim-load"));
        (Arc::new(InProcessCluster { server, api }), clock)
    }

    #[async_trait::async_trait]
    impl Cluster for InProcessCluster {
        fn api(&self) -> Arc<dyn Api> {
            self.api.clone()
        }
        async fn resolve(
            &self,
            api_version: &str,
            kind: &str,
        ) -> Result<(ResourceRef, bool), ApiError> {
            let r = self
                .server
                .registry
                .by_kind(api_version, kind)
                .ok_or_else(|| {
                    ApiError::new(
                        404,
                        "NotFound",
                        format!("{kind} in {api_version} is not served"),
                    )
                })?;
            Ok((
                ResourceRef::new(&r.group, &r.version, &r.plural),
                r.scope == kubesim_core::Scope::Namespaced,
            ))
        }
        async fn get_text(&self, path: &str) -> Result<String, ApiError> {
            Err(ApiError::new(
                404,
                "NotFound",
                format!("{path} is not served in process"),
            ))
        }
    }
}
