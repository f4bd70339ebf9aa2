//! What every active namespace is expected to hold: the ServiceAccount
//! `default` (pods default to it) and, when the cluster has a CA, the
//! ConfigMap `kube-root-ca.crt` that in-cluster clients read it from.
//! Upstream these come from the service-account controller and the
//! root-CA publisher.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kubesim_core::{meta, ApiError};
use kubesim_runtime::{Api, Clock, ListOptions, ResourceRef, WatchEvent, WriteOptions};
use serde_json::{json, Value};

/// Pause before re-watching after the watch ended or failed.
const REWATCH: Duration = Duration::from_secs(1);

pub struct NamespaceDefaults {
    /// Watches namespaces and reads what exists.
    api: Arc<dyn Api>,
    /// Creates the ServiceAccounts (the service-account controller's
    /// identity) and the CA ConfigMaps (the root-CA publisher's).
    sa_api: Arc<dyn Api>,
    ca_api: Arc<dyn Api>,
    clock: Clock,
    root_ca: Option<String>,
    service_accounts: bool,
}

impl NamespaceDefaults {
    pub fn new(api: Arc<dyn Api>, clock: Clock, root_ca: Option<String>) -> Self {
        NamespaceDefaults {
            sa_api: api.clone(),
            ca_api: api.clone(),
            api,
            clock,
            root_ca,
            service_accounts: true,
        }
    }

    /// Whether each namespace gets its `default` ServiceAccount (upstream's
    /// serviceaccount-controller; the CA copy is another controller's).
    pub fn with_service_accounts(mut self, on: bool) -> Self {
        self.service_accounts = on;
        self
    }

    /// Creates the ServiceAccounts through `service_accounts` and the CA
    /// ConfigMaps through `root_ca`, each upstream controller's identity.
    pub fn with_writers(mut self, service_accounts: Arc<dyn Api>, root_ca: Arc<dyn Api>) -> Self {
        self.sa_api = service_accounts;
        self.ca_api = root_ca;
        self
    }

    /// Watches namespaces forever; a watch from no resourceVersion starts
    /// with every existing namespace, so a restart catches up by itself.
    pub async fn run(self) {
        let nsr = ResourceRef::core("namespaces");
        loop {
            match self.api.watch(&nsr, "", &ListOptions::default()).await {
                Ok(mut events) => {
                    while let Some(ev) = events.next().await {
                        match ev {
                            WatchEvent::Added(ns) | WatchEvent::Modified(ns) => {
                                if let Err(e) = self.ensure(&ns).await {
                                    tracing::warn!(namespace = meta::name(&ns), error = %e.message, "namespace defaults failed");
                                }
                            }
                            WatchEvent::Error(_) => break,
                            _ => {}
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e.message, "namespace watch failed"),
            }
            self.clock.sleep(REWATCH).await;
        }
    }

    async fn ensure(&self, ns: &Value) -> Result<(), ApiError> {
        let phase = ns
            .get("status")
            .and_then(|s| s.get("phase"))
            .and_then(Value::as_str);
        if meta::is_deleting(ns) || phase == Some("Terminating") {
            return Ok(());
        }
        let name = meta::name(ns);
        let sa =
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}});
        if self.service_accounts {
            self.create_missing(
                &*self.sa_api,
                &ResourceRef::core("serviceaccounts"),
                name,
                "default",
                sa,
            )
            .await?;
        }
        if let Some(ca) = &self.root_ca {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "kube-root-ca.crt", "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
                "data": {"ca.crt": ca}});
            self.create_missing(
                &*self.ca_api,
                &ResourceRef::core("configmaps"),
                name,
                "kube-root-ca.crt",
                cm,
            )
            .await?;
        }
        Ok(())
    }

    async fn create_missing(
        &self,
        writer: &dyn Api,
        r: &ResourceRef,
        ns: &str,
        name: &str,
        obj: Value,
    ) -> Result<(), ApiError> {
        match self.api.get(r, ns, name).await {
            Ok(_) => return Ok(()),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
        match writer.create(r, ns, obj, &WriteOptions::default()).await {
            // Someone else made it, or the namespace began terminating.
            Err(e) if e.code == 409 || e.code == 403 || e.code == 404 => Ok(()),
            other => other.map(|_| ()),
        }
    }
}
