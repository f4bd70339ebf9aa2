//! The objects every cluster starts with.

use kubesim_core::meta;
use kubesim_runtime::WriteOptions;
use serde_json::json;

use super::{Caller, Server};

const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

impl Server {
    /// Creates the system namespaces and the `kubernetes` service if missing.
    pub async fn bootstrap(&self) -> Result<(), kubesim_core::ApiError> {
        let nsr = self.resource("", "v1", "namespaces")?;
        let caller = Caller {
            user_agent: "kube-apiserver".into(),
        };
        let opts = WriteOptions::default();
        for ns in SYSTEM_NAMESPACES {
            if self.store.get(&nsr.storage_key(), ns).is_none() {
                let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}});
                match self.create(&nsr, "", obj, &opts, &caller).await {
                    Ok(_) => {}
                    Err(e) if e.code == 409 => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let svc = self.resource("", "v1", "services")?;
        if self
            .store
            .get(&svc.storage_key(), "default/kubernetes")
            .is_none()
        {
            let obj = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kubernetes", "namespace": "default",
                "labels": {"component": "apiserver", "provider": "kubernetes"}},
                "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]}});
            match self.create(&svc, "default", obj, &opts, &caller).await {
                Ok(r) => {
                    tracing::debug!(name = meta::name(&r.obj), "created the kubernetes service")
                }
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
