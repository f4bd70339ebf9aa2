//! The identity in a TLS client's certificate, which the server verified
//! against the cluster's CA during the handshake: the subject's CN is the
//! user and each O a group, as kube-apiserver's x509 authenticator reads
//! them.

use kubesim_apiserver::auth::authn::PeerIdentity;
use x509_parser::prelude::{FromDer, X509Certificate};

/// The subject of the client's leaf certificate, if it sent one.
pub fn peer_identity(conn: &rustls::ServerConnection) -> Option<PeerIdentity> {
    let leaf = conn.peer_certificates()?.first()?;
    subject_of(leaf.as_ref())
}

/// CN and O of a DER certificate.
pub fn subject_of(der: &[u8]) -> Option<PeerIdentity> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let subject = cert.subject();
    let common_name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())?
        .to_string();
    let organizations = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Some(PeerIdentity {
        common_name,
        organizations,
    })
}
