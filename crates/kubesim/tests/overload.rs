//! `--max-requests-inflight`: a service account flooding the server with
//! concurrent LISTs is answered 429 with `Retry-After: 1`, while another
//! account's requests keep being served, each waiting its turn instead of
//! being turned away. Outcomes only are asserted, never timings.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::tls::{kubectl, TlsServer as Server};

/// `kubesim up --tls` with both limits at 1. Over plain HTTP every caller
/// is the admin, whom the limits exempt, so the test needs tokens, hence
/// TLS.
fn start() -> Server {
    common::tls::start(
        "overload",
        &[
            "--max-requests-inflight",
            "1",
            "--max-mutating-requests-inflight",
            "1",
        ],
    )
}

/// A token for a new service account allowed to read the namespace
/// (`view`), as RBAC is enforced (the namespace's controller must have
/// run first, which the retry covers).
fn token_for(server: &Server, name: &str) -> String {
    let kc = server.dir.join("kubeconfig");
    let account = format!("default:{name}");
    for args in [
        vec!["create", "serviceaccount", name],
        vec![
            "create",
            "rolebinding",
            name,
            "--clusterrole",
            "view",
            "--serviceaccount",
            &account,
        ],
    ] {
        let out = kubectl(&kc, &args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = kubectl(&kc, &["create", "token", name]);
        if out.status.success() {
            return String::from_utf8_lossy(&out.stdout).trim().to_string();
        }
        assert!(
            Instant::now() < deadline,
            "create token: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// What curl needs to reach the server.
#[derive(Clone)]
struct Client {
    url: String,
    ca: PathBuf,
    dir: PathBuf,
}

impl Server {
    fn client(&self) -> Client {
        Client {
            url: self.url(),
            ca: self.dir.join("pki").join("ca.crt"),
            dir: self.dir.clone(),
        }
    }
}

/// `count` GETs of `path` at once from one curl process; one line per
/// answer: the status code, the Retry-After and Content-Type headers.
fn curl_parallel(server: &Client, token: &str, path: &str, count: usize) -> Vec<String> {
    let mut config = String::new();
    for _ in 0..count {
        config.push_str(&format!(
            "url = \"{}{path}\"\noutput = \"/dev/null\"\n",
            server.url
        ));
    }
    let cfg = server.dir.join(format!("curl-{count}.cfg"));
    std::fs::write(&cfg, config).unwrap();
    let out = Command::new("curl")
        // HTTP/2: the transfers share one connection, so they reach the
        // server together instead of one TLS handshake apart.
        .args(["--silent", "--http2", "--parallel"])
        .args(["--parallel-max", &count.to_string()])
        .arg("--cacert")
        .arg(&server.ca)
        .args(["-H", &format!("Authorization: Bearer {token}")])
        .args(["--max-time", "60"])
        .args([
            "-w",
            "%{http_code} %header{retry-after} %header{content-type}\\n",
        ])
        .arg("-K")
        .arg(&cfg)
        .output()
        .expect("run curl");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

/// One GET; the status code and the body.
fn curl_one(server: &Client, token: &str, path: &str) -> (String, String) {
    let out = Command::new("curl")
        .args(["--silent", "--max-time", "60"])
        .arg("--cacert")
        .arg(&server.ca)
        .args(["-H", &format!("Authorization: Bearer {token}")])
        .args(["-w", "\n%{http_code}"])
        .arg(format!("{}{path}", server.url))
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.to_string(), body.to_string())
}

#[test]
fn a_flooding_client_gets_429s_while_another_is_served() {
    let server = start();
    let kc = server.dir.join("kubeconfig");
    // Something worth listing: a few hundred kilobytes per LIST.
    let mut items = Vec::new();
    for i in 0..200 {
        items.push(format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}"}},"data":{{"v":"{}"}}}}"#,
            "x".repeat(2000)
        ));
    }
    let list = format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
        items.join(",")
    );
    let manifest = server.dir.join("configmaps.json");
    std::fs::write(&manifest, list).unwrap();
    let out = kubectl(
        &kc,
        &[
            "create",
            "--validate=false",
            "-f",
            manifest.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let flooder = token_for(&server, "flooder");
    let polite = token_for(&server, "polite");
    let path = "/api/v1/namespaces/default/configmaps";

    // The polite client asks one request at a time for as long as the
    // flood lasts; the flood lasts until it has been refused (or a bound).
    let flooding = Arc::new(AtomicBool::new(true));
    let client = server.client();
    let polite_thread = {
        let flooding = flooding.clone();
        let client = client.clone();
        std::thread::spawn(move || {
            let mut codes = Vec::new();
            while flooding.load(Ordering::SeqCst) || codes.len() < 5 {
                codes.push(curl_one(&client, &polite, path).0);
            }
            codes
        })
    };

    let mut answers = Vec::new();
    // A few rounds so that the polite client's requests meet the flood.
    for round in 0..40 {
        answers.extend(curl_parallel(&client, &flooder, path, 24));
        if round >= 2 && answers.iter().any(|a| a.starts_with("429")) {
            break;
        }
    }
    flooding.store(false, Ordering::SeqCst);
    let polite_codes = polite_thread.join().unwrap();

    let refused: Vec<&String> = answers.iter().filter(|a| a.starts_with("429")).collect();
    eprintln!(
        "flood: {} answers, {} refused; polite client: {} answers",
        answers.len(),
        refused.len(),
        polite_codes.len()
    );
    assert!(
        !refused.is_empty(),
        "the flood was never refused: {answers:?}"
    );
    for a in &refused {
        // Upstream's answer is plain text, not a Status.
        assert_eq!(
            a.as_str(),
            "429 1 text/plain; charset=utf-8",
            "429 without Retry-After: 1"
        );
    }
    assert!(
        answers.iter().any(|a| a.starts_with("200")),
        "the flooder was never served: {answers:?}"
    );
    assert!(
        answers
            .iter()
            .all(|a| a.starts_with("200") || a.starts_with("429")),
        "{answers:?}"
    );
    assert!(
        polite_codes.iter().all(|c| c == "200"),
        "the polite client was refused: {polite_codes:?}"
    );

    // Every refusal is counted.
    let metrics = kubectl(&kc, &["get", "--raw", "/metrics"]);
    let text = String::from_utf8_lossy(&metrics.stdout);
    let dropped = text
        .lines()
        .find(|l| l.starts_with("apiserver_dropped_requests_total{request_kind=\"readOnly\"}"))
        .unwrap_or_else(|| panic!("{text}"));
    let n: u64 = dropped.rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!(n as usize, refused.len(), "{dropped}");
    assert!(text.contains("apiserver_current_inflight_requests{request_kind=\"mutating\"}"));

    // The admin is never refused: a flood of its own is all served.
    let admin = std::fs::read_to_string(server.dir.join("pki").join("token")).unwrap();
    let admin_answers = curl_parallel(&client, admin.trim(), path, 16);
    assert_eq!(admin_answers.len(), 16);
    assert!(
        admin_answers.iter().all(|a| a.starts_with("200")),
        "{admin_answers:?}"
    );
}
