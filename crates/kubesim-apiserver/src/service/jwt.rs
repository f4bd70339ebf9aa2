//! Service account tokens as JWTs (`header.payload.signature`, base64url
//! without padding), the shape clients and tools expect to decode.
//!
//! Upstream signs with the cluster's RSA/ECDSA service-account key and
//! publishes it for OIDC discovery. kubesim only needs to recognise its own
//! tokens, so it signs with HMAC-SHA256 (`HS256`) under a per-cluster secret
//! drawn from the OS random generator when the cluster is first started and
//! kept in its store (see `bootstrap`), so tokens outlive restarts as they
//! do on a real cluster; nobody else can verify them.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::hmac;
use serde_json::{json, Value};

/// `iss` of every token, upstream's default issuer.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// `iss` of the tokens kept in legacy token Secrets, upstream's.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";

pub struct Signer {
    key: hmac::Key,
    secret: Vec<u8>,
}

impl Signer {
    /// A signer with a fresh random key; `fallback` seeds it only if the OS
    /// generator fails, which would otherwise leave the server unable to start.
    pub fn new(fallback: impl FnOnce() -> Vec<u8>) -> Self {
        use ring::rand::SecureRandom;
        let mut secret = [0u8; 32];
        match ring::rand::SystemRandom::new().fill(&mut secret) {
            Ok(()) => Self::from_secret(&secret),
            Err(_) => Self::from_secret(&fallback()),
        }
    }

    /// A signer with a known secret (one kept from an earlier start).
    pub fn from_secret(secret: &[u8]) -> Self {
        Signer {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
            secret: secret.to_vec(),
        }
    }

    /// The secret, to keep it.
    pub fn secret(&self) -> &[u8] {
        &self.secret
    }

    /// The signed token carrying `claims`.
    pub fn sign(&self, claims: &Value) -> String {
        let header = json!({"alg": "HS256", "kid": "kubesim", "typ": "JWT"});
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let tag = hmac::sign(&self.key, signing_input.as_bytes());
        format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    /// The claims of a token this signer issued, if its signature holds.
    /// Expiry is the caller's to check (it owns the clock).
    pub fn verify(&self, token: &str) -> Option<Value> {
        let (signing_input, sig) = token.rsplit_once('.')?;
        let (header, payload) = signing_input.split_once('.')?;
        let sig = URL_SAFE_NO_PAD.decode(sig).ok()?;
        hmac::verify(&self.key, signing_input.as_bytes(), &sig).ok()?;
        let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?;
        if header.get("alg").and_then(Value::as_str) != Some("HS256") {
            return None;
        }
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_secret_verifies_earlier_tokens() {
        let first = Signer::new(|| vec![1; 32]);
        let t = first.sign(&json!({"sub": "x"}));
        let again = Signer::from_secret(first.secret());
        assert_eq!(again.verify(&t).unwrap()["sub"], "x");
        assert!(Signer::new(|| vec![2; 32]).verify(&t).is_none());
    }

    #[test]
    fn signs_and_verifies() {
        let s = Signer::new(|| vec![1; 32]);
        let t = s.sign(&json!({"sub": "system:serviceaccount:default:default"}));
        assert_eq!(t.split('.').count(), 3);
        assert_eq!(
            s.verify(&t).unwrap()["sub"],
            "system:serviceaccount:default:default"
        );
        // Another cluster's key, a changed payload, garbage: all refused.
        assert!(Signer::new(|| vec![2; 32]).verify(&t).is_none());
        let (h, rest) = t.split_once('.').unwrap();
        let (_, sig) = rest.split_once('.').unwrap();
        let forged = format!("{h}.{}.{sig}", URL_SAFE_NO_PAD.encode(r#"{"sub":"x"}"#));
        assert!(s.verify(&forged).is_none());
        assert!(s.verify("a.b").is_none() && s.verify("").is_none());
    }
}
