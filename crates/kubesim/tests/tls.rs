//! `kubesim up --tls`: real kubectl over HTTPS with the generated CA and
//! bearer token, and a refusal for a wrong token.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::tls::{free_port, kubectl, start_in};

fn start(name: &str) -> common::tls::TlsServer {
    common::tls::start(name, &[])
}

#[test]
fn kubectl_over_tls_with_token() {
    let server = start("ok");
    let kc = server.dir.join("kubeconfig");
    let text = std::fs::read_to_string(&kc).unwrap();
    assert!(text.contains("server: https://127.0.0.1:"), "{text}");
    assert!(text.contains("certificate-authority-data:"), "{text}");
    for f in ["ca.crt", "ca.key", "server.crt", "server.key", "token"] {
        assert!(server.dir.join("pki").join(f).exists(), "pki/{f} missing");
    }

    let out = kubectl(&kc, &["get", "namespaces", "-o", "name"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "kubectl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.lines().any(|l| l == "namespace/default"), "{stdout}");
}

#[test]
fn wrong_token_is_unauthorized() {
    let server = start("bad");
    let kc = server.dir.join("kubeconfig");
    let token = std::fs::read_to_string(server.dir.join("pki").join("token")).unwrap();
    let text = std::fs::read_to_string(&kc).unwrap();
    assert!(text.contains(token.trim()), "kubeconfig lacks the token");
    let bad = server.dir.join("kubeconfig-bad");
    std::fs::write(&bad, text.replace(token.trim(), "not-the-token")).unwrap();

    let out = kubectl(&bad, &["get", "namespaces"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a wrong token was accepted");
    assert!(
        stderr.contains("Unauthorized") || stderr.contains("provide credentials"),
        "{stderr}"
    );

    // A wrong token is refused even on the probes, as upstream does...
    let out = kubectl(&bad, &["get", "--raw", "/readyz"]);
    assert!(
        !out.status.success(),
        "a wrong token was accepted on /readyz"
    );
    // ...which stay open without credentials, as system:anonymous, who
    // may read nothing else. (kubectl would prompt for a password without
    // credentials, so kube-rs asks.)
    let anonymous = text.replace(&format!("\n    token: {}", token.trim()), " {}");
    assert!(!anonymous.contains(token.trim()));
    let (probe, list) = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let kc = kube::config::Kubeconfig::from_yaml(&anonymous).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .expect("config");
        let client = kube::Client::try_from(config).expect("client");
        let get = |path: &str| http::Request::get(path).body(Vec::new()).unwrap();
        let probe = client.request_text(get("/readyz")).await;
        let list = client.request_text(get("/api/v1/namespaces")).await;
        (probe, list)
    });
    assert_eq!(probe.expect("anonymous /readyz"), "ok");
    match list {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 403);
            assert_eq!(
                s.message,
                "namespaces is forbidden: User \"system:anonymous\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
            );
        }
        other => panic!("anonymous listed namespaces: {other:?}"),
    }
}

#[test]
fn issued_service_account_tokens_authenticate() {
    let server = start("sa");
    let kc = server.dir.join("kubeconfig");
    let admin = std::fs::read_to_string(server.dir.join("pki").join("token")).unwrap();
    let text = std::fs::read_to_string(&kc).unwrap();

    // The default account appears once the namespace controller has run.
    let deadline = Instant::now() + Duration::from_secs(20);
    let issued = loop {
        let out = kubectl(&kc, &["create", "token", "default"]);
        if out.status.success() {
            break String::from_utf8_lossy(&out.stdout).trim().to_string();
        }
        assert!(
            Instant::now() < deadline,
            "create token: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let as_sa = server.dir.join("kubeconfig-sa");
    std::fs::write(&as_sa, text.replace(admin.trim(), &issued)).unwrap();
    let out = kubectl(
        &as_sa,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    );
    assert!(
        out.status.success(),
        "an issued token was refused: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "system:serviceaccount:default:default"
    );

    // A tampered token is not.
    // (a character inside the signature, not its last one, whose low bits
    // base64 leaves unused)
    let mut forged: Vec<char> = issued.chars().collect();
    let i = forged.len() - 10;
    forged[i] = if forged[i] == 'A' { 'B' } else { 'A' };
    let forged: String = forged.into_iter().collect();
    std::fs::write(&as_sa, text.replace(admin.trim(), &forged)).unwrap();
    let out = kubectl(&as_sa, &["auth", "whoami"]);
    assert!(!out.status.success(), "a forged token was accepted");

    // Nor one whose service account is gone.
    let out = kubectl(&kc, &["delete", "serviceaccount", "default"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&as_sa, text.replace(admin.trim(), &issued)).unwrap();
    let out = kubectl(&as_sa, &["auth", "whoami"]);
    assert!(
        !out.status.success(),
        "a token of a deleted account was accepted"
    );
}

/// Issued tokens are signed with a key kept in the data directory, so they
/// still authenticate after the server restarts, as on a real cluster.
#[test]
fn issued_tokens_survive_a_restart() {
    let dir = std::env::temp_dir().join(format!("kubesim-tls-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut server = start_in(dir.clone(), &[]);
    let kc = dir.join("kubeconfig");
    let mut issued = None;
    for _ in 0..100 {
        let out = kubectl(&kc, &["create", "token", "default"]);
        if out.status.success() {
            issued = Some(String::from_utf8_lossy(&out.stdout).trim().to_string());
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let issued = issued.expect("a token for the default service account");
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    // Same data directory, new process (and port: the kubeconfig is
    // rewritten).
    let server = start_in(dir.clone(), &[]);
    let admin = std::fs::read_to_string(dir.join("pki").join("token")).unwrap();
    let text = std::fs::read_to_string(&kc).unwrap();
    let as_sa = dir.join("kubeconfig-sa");
    std::fs::write(&as_sa, text.replace(admin.trim(), &issued)).unwrap();
    let out = kubectl(&as_sa, &["auth", "whoami"]);
    assert!(
        out.status.success(),
        "a token issued before the restart was refused: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The key is a file only its owner reads, and no stored object.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("service-account.key"))
            .expect("the signing key file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let secrets = kubectl(&kc, &["get", "secrets", "-A", "-o", "name"]);
    assert!(secrets.status.success());
    assert!(
        String::from_utf8_lossy(&secrets.stdout).trim().is_empty(),
        "{}",
        String::from_utf8_lossy(&secrets.stdout)
    );
    drop(server);
}

#[test]
fn plain_http_beyond_loopback_is_refused() {
    let dir = std::env::temp_dir().join(format!("kubesim-plain-{}", free_port()));
    let o = Command::new(env!("CARGO_BIN_EXE_kubesim"))
        .args(["up", "--ephemeral", "--listen", "0.0.0.0:0", "--data-dir"])
        .arg(&dir)
        .output()
        .expect("run kubesim");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!o.status.success(), "plain HTTP on 0.0.0.0 was served");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one clear line: {err}");
    assert!(
        err.contains("not a loopback address") && err.contains("--tls"),
        "{err}"
    );
}

/// The component kubeconfigs carry client certificates signed by the
/// cluster's CA: each authenticates as its own user and RBAC holds it to
/// the default policy's role for it.
#[test]
fn client_certificates_are_identities() {
    let server = start("x509");
    let pki = server.dir.join("pki");
    let who = |kc: &Path| {
        let out = kubectl(kc, &["auth", "whoami", "-o", "json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["status"]["userInfo"]
            .clone()
    };
    let scheduler = pki.join("kube-scheduler.kubeconfig");
    let text = std::fs::read_to_string(&scheduler).unwrap();
    assert!(
        text.contains("client-certificate-data:") && !text.contains("token:"),
        "{text}"
    );
    assert_eq!(who(&scheduler)["username"], "system:kube-scheduler");
    let pods = kubectl(&scheduler, &["get", "pods", "-A"]);
    assert!(
        pods.status.success(),
        "{}",
        String::from_utf8_lossy(&pods.stderr)
    );
    let secrets = kubectl(&scheduler, &["get", "secrets", "-A"]);
    assert!(!secrets.status.success());
    assert!(
        String::from_utf8_lossy(&secrets.stderr)
            .contains("User \"system:kube-scheduler\" cannot list resource \"secrets\""),
        "{}",
        String::from_utf8_lossy(&secrets.stderr)
    );
    let kcm = pki.join("kube-controller-manager.kubeconfig");
    assert_eq!(who(&kcm)["username"], "system:kube-controller-manager");
    let admin = who(&pki.join("admin.kubeconfig"));
    assert_eq!(admin["username"], "kubernetes-admin");
    assert!(
        admin["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g == "system:masters"),
        "{admin}"
    );
}

/// The remote client (under `kubesim emulate` and `load --kubeconfig`)
/// speaks HTTP/2 to a server that offers it over TLS, as client-go does,
/// and its watches and writes work as streams of that connection.
#[test]
fn the_remote_client_speaks_http2_over_tls() {
    use futures::StreamExt;
    use kubesim_runtime::api::{Api, ListOptions, ResourceRef, WatchEvent, WriteOptions};
    use kubesim_runtime::remote::RemoteApi;

    let server = start("h2");
    let kc = server.dir.join("kubeconfig");
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let api = RemoteApi::from_kubeconfig(Some(&kc)).await.expect("client");
        let get = http::Request::get("/version")
            .body(kube::client::Body::empty())
            .unwrap();
        let res = api.client().send(get).await.expect("GET /version");
        assert_eq!(res.version(), http::Version::HTTP_2);

        let cms = ResourceRef::new("", "v1", "configmaps");
        let mut watch = api
            .watch(&cms, "default", &ListOptions::default())
            .await
            .expect("watch");
        // Several writes in flight at once on the same connection.
        let creates = (0..8).map(|i| {
            let api = api.clone();
            let cms = cms.clone();
            async move {
                let cm = serde_json::json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("h2-{i}")},
                });
                api.create(&cms, "default", cm, &WriteOptions::default())
                    .await
            }
        });
        for created in futures::future::join_all(creates).await {
            created.expect("create over HTTP/2");
        }
        let mut seen = std::collections::BTreeSet::new();
        while seen.len() < 8 {
            let event = tokio::time::timeout(Duration::from_secs(10), watch.next())
                .await
                .expect("a watch event within 10 s")
                .expect("the watch stays open");
            if let WatchEvent::Added(obj) = event {
                let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
                if name.starts_with("h2-") {
                    seen.insert(name);
                }
            }
        }
    });
}

/// With HTTP/2 turned off (client-go's `DISABLE_HTTP2`, which `client`
/// reads), the same transport speaks HTTP/1.1 to the same server.
#[test]
fn the_remote_client_can_be_held_to_http1() {
    let server = start("h1");
    let kc = server.dir.join("kubeconfig");
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let kubeconfig = kube::config::Kubeconfig::read_from(&kc).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("config");
        for (http2, version) in [
            (true, http::Version::HTTP_2),
            (false, http::Version::HTTP_11),
        ] {
            let client = kubesim_runtime::remote_transport::client_offering(config.clone(), http2)
                .expect("client");
            let get = http::Request::get("/version")
                .body(kube::client::Body::empty())
                .unwrap();
            let res = client.send(get).await.expect("GET /version");
            assert_eq!(res.version(), version, "offering HTTP/2: {http2}");
        }
    });
}
