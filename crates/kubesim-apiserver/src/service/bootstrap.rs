//! The objects every cluster starts with.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use kubesim_core::meta;
use kubesim_runtime::WriteOptions;
use serde_json::{json, Value};

use super::{jwt, Caller, Server};

/// The Secret in which earlier versions kept the token signing secret.
const OLD_TOKEN_KEY: &str = "kubesim-service-account-signing-key";

const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

impl Server {
    /// Creates the system namespaces and the `kubernetes` service if missing.
    pub async fn bootstrap(&self) -> Result<(), kubesim_core::ApiError> {
        self.lease_stored_events();
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
        self.track_legacy_tokens(&opts, &caller).await?;
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
        self.bootstrap_rbac(&caller).await?;
        self.retire_stored_token_key().await
    }

    /// Moves the signing secret an earlier version kept in a Secret into
    /// memory and deletes the Secret: a stored key could be read through
    /// the API by anyone allowed to read Secrets in `kube-system`, and
    /// then mint a token for any identity. The binary keeps the key in
    /// its data directory instead (see [`Server::token_signing_secret`]).
    async fn retire_stored_token_key(&self) -> Result<(), kubesim_core::ApiError> {
        let secrets = self.resource("", "v1", "secrets")?;
        let Ok(found) = self.get(&secrets, "kube-system", OLD_TOKEN_KEY) else {
            return Ok(());
        };
        if let Some(k) = found
            .pointer("/data/key")
            .and_then(Value::as_str)
            .and_then(|k| STANDARD.decode(k).ok())
            .filter(|k| !k.is_empty())
        {
            *self.tokens.write() = jwt::Signer::from_secret(&k);
        }
        match self
            .delete(&secrets, "kube-system", OLD_TOKEN_KEY, &Default::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The secret that signs service account tokens, for the binary to
    /// keep beside the store (mode 0600) so tokens outlive a restart.
    pub fn token_signing_secret(&self) -> Vec<u8> {
        self.tokens.read().secret().to_vec()
    }

    /// Signs and checks tokens with a secret kept from an earlier start.
    pub fn set_token_signing_secret(&self, secret: &[u8]) {
        *self.tokens.write() = jwt::Signer::from_secret(secret);
    }
}

/// The ConfigMap with which kube-apiserver records since when it tracks the
/// use of legacy service account tokens; kube-controller-manager's
/// legacy-serviceaccount-token-cleaner reads it and logs an error while it
/// is missing.
const LEGACY_TOKEN_TRACKING: &str = "kube-apiserver-legacy-service-account-token-tracking";

impl Server {
    async fn track_legacy_tokens(
        &self,
        opts: &WriteOptions,
        caller: &Caller,
    ) -> Result<(), kubesim_core::ApiError> {
        let configmaps = self.resource("", "v1", "configmaps")?;
        if self
            .store
            .get(
                &configmaps.storage_key(),
                &format!("kube-system/{LEGACY_TOKEN_TRACKING}"),
            )
            .is_some()
        {
            return Ok(());
        }
        // A date, as upstream writes it (2006-01-02).
        let since: String = meta::format_time(self.clock.now())
            .chars()
            .take(10)
            .collect();
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": LEGACY_TOKEN_TRACKING, "namespace": "kube-system"},
            "data": {"since": since}});
        match self
            .create(&configmaps, "kube-system", obj, opts, caller)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }
}
