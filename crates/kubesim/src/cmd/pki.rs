//! The certificates and bearer token behind `kubesim up --tls`.
//!
//! They are made once and kept in `<data-dir>/pki/`, so a kubeconfig (and any
//! client that trusted the CA) stays valid across restarts.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// The PEM material and token the TLS server and its kubeconfig need.
pub struct Pki {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
    pub token: String,
    /// Where the CA's key is, to sign client certificates.
    dir: PathBuf,
}

/// A client certificate and its key, in PEM.
pub struct ClientCert {
    pub cert_pem: String,
    pub key_pem: String,
}

impl Pki {
    /// A client certificate signed by the cluster's CA for the user
    /// `common_name` in the groups `organizations`, as kube-apiserver's
    /// x509 authenticator reads them (CN the user, each O a group).
    pub fn client_cert(
        &self,
        common_name: &str,
        organizations: &[&str],
    ) -> anyhow::Result<ClientCert> {
        let ca_key = KeyPair::from_pem(&read(&self.dir.join("ca.key"))?)
            .context("cannot parse pki/ca.key")?;
        let issuer = Issuer::new(ca_params()?, ca_key);
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        for o in organizations {
            params.distinguished_name.push(DnType::OrganizationName, *o);
        }
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        Ok(ClientCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

const FILES: [&str; 5] = ["ca.crt", "ca.key", "server.crt", "server.key", "token"];

/// Loads the PKI from `dir`, creating whatever is missing. The server
/// certificate names `localhost`, `127.0.0.1` and `listen_ip`.
pub fn load_or_create(dir: &Path, listen_ip: IpAddr) -> anyhow::Result<Pki> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = |name: &str| dir.join(name);
    if FILES.iter().all(|f| path(f).exists()) {
        return Ok(Pki {
            ca_pem: read(&path("ca.crt"))?,
            cert_pem: read(&path("server.crt"))?,
            key_pem: read(&path("server.key"))?,
            token: read(&path("token"))?.trim().to_string(),
            dir: dir.to_path_buf(),
        });
    }

    // Keep an existing CA so clients that already trust it keep working.
    let ca_key = match std::fs::read_to_string(path("ca.key")) {
        Ok(pem) if path("ca.crt").exists() => {
            KeyPair::from_pem(&pem).context("cannot parse pki/ca.key")?
        }
        _ => KeyPair::generate()?,
    };
    let ca_params = ca_params()?;
    let ca_pem = if path("ca.crt").exists() && path("ca.key").exists() {
        read(&path("ca.crt"))?
    } else {
        let ca = ca_params.self_signed(&ca_key)?;
        write(&path("ca.key"), &ca_key.serialize_pem(), true)?;
        write(&path("ca.crt"), &ca.pem(), false)?;
        ca.pem()
    };
    // The same subject and key as the stored CA certificate, which is all
    // signing needs.
    let issuer = Issuer::new(ca_params, ca_key);

    let mut params = CertificateParams::new(vec!["localhost".to_string()])?;
    params
        .distinguished_name
        .push(DnType::CommonName, "kubesim");
    let mut ips = vec![IpAddr::from([127, 0, 0, 1])];
    if !ips.contains(&listen_ip) {
        ips.push(listen_ip);
    }
    params
        .subject_alt_names
        .extend(ips.into_iter().map(SanType::IpAddress));
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;
    write(&path("server.key"), &key.serialize_pem(), true)?;
    write(&path("server.crt"), &cert.pem(), false)?;

    let token = match std::fs::read_to_string(path("token")) {
        Ok(t) if !t.trim().is_empty() => t.trim().to_string(),
        _ => {
            let t = new_token()?;
            write(&path("token"), &t, true)?;
            t
        }
    };
    Ok(Pki {
        ca_pem,
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        token,
        dir: dir.to_path_buf(),
    })
}

fn ca_params() -> anyhow::Result<CertificateParams> {
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    p.distinguished_name.push(DnType::CommonName, "kubesim-ca");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(p)
}

/// A fresh bearer token from the operating system's RNG. Everything else in
/// kubesim draws from the seeded `Rng` so runs replay; a credential must not
/// be reproducible from a seed, so this is the one deliberate exception.
fn new_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no system randomness: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn read(p: &PathBuf) -> anyhow::Result<String> {
    std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))
}

/// Writes a file; secrets are readable by the owner only.
pub fn write(p: &Path, contents: &str, secret: bool) -> anyhow::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = secret;
    use std::io::Write;
    opts.open(p)
        .and_then(|mut f| f.write_all(contents.as_bytes()))
        .with_context(|| format!("cannot write {}", p.display()))
}
