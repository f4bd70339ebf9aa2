//! End-to-end: what `deploy/emulate/` ships works as shipped.
//! - Its RBAC is enough: `kubesim emulate` authenticated as the
//!   ServiceAccount of `rbac.yaml` (a real token, over TLS, RBAC on) brings
//!   its nodes up and runs a pod without one request refused, and the
//!   StatefulSet passes the server's validation.
//! - The image's root file system holds all the binary needs: it runs
//!   under `chroot` as the image's non-root user. Building the image
//!   itself needs a container engine; where one answers, the image is
//!   built and run against a cluster, and brings its nodes up. Without
//!   one the test says so.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::tls;

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

fn ok(kc: &Path, args: &[&str]) -> String {
    let o = tls::kubectl(kc, args);
    assert!(
        o.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// How many nodes are Ready, as the admin's kubectl reads them.
fn ready_nodes(kubeconfig: &Path) -> usize {
    let out = ok(
        kubeconfig,
        &[
            "get",
            "nodes",
            "-o",
            "jsonpath={.items[*].status.conditions[?(@.type=='Ready')].status}",
        ],
    );
    out.split_whitespace().filter(|s| *s == "True").count()
}

fn within(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn the_shipped_rbac_is_enough_for_emulate() {
    let server = tls::start("emulate-rbac", &["--emulator", "none"]);
    let admin = server.kubeconfig();
    ok(
        &admin,
        &[
            "apply",
            "-f",
            repo("deploy/emulate/rbac.yaml").to_str().unwrap(),
        ],
    );
    ok(
        &admin,
        &[
            "apply",
            "--dry-run=server",
            "-f",
            repo("deploy/emulate/statefulset.yaml").to_str().unwrap(),
        ],
    );
    let token = ok(
        &admin,
        &[
            "create",
            "token",
            "kubesim-emulate",
            "-n",
            "kubesim-emulate",
        ],
    );
    // The admin's kubeconfig with the ServiceAccount's token instead.
    let text = std::fs::read_to_string(&admin).unwrap();
    let sa_text: String = text
        .lines()
        .map(|l| match l.trim_start().strip_prefix("token: ") {
            Some(_) => format!("    token: {}", token.trim()),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(sa_text, text, "no token line in the admin kubeconfig");
    let sa = server.dir.join("sa.kubeconfig");
    std::fs::write(&sa, sa_text).unwrap();
    assert_eq!(
        ok(
            &sa,
            &[
                "auth",
                "whoami",
                "-o",
                "jsonpath={.status.userInfo.username}"
            ]
        ),
        "system:serviceaccount:kubesim-emulate:kubesim-emulate"
    );

    let log = server.dir.join("emulate.log");
    let mut emulate = Command::new(env!("CARGO_BIN_EXE_kubesim"))
        .args(["emulate", "--kubeconfig"])
        .arg(&sa)
        .args(["--nodes", "3", "--shard", "0/1"])
        .env(
            "RUST_LOG",
            "debug,hyper=info,h2=info,rustls=info,tower=info",
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .unwrap();
    let result = std::panic::catch_unwind(|| {
        within(Duration::from_secs(60), "3 Ready nodes", || {
            ready_nodes(&admin) == 3
        });
        ok(&admin, &["run", "p", "--image=registry.k8s.io/pause:3.10"]);
        within(Duration::from_secs(60), "the pod Running", || {
            ok(
                &admin,
                &["get", "pod", "p", "-o", "jsonpath={.status.phase}"],
            ) == "Running"
        });
        // A lease renewal round and a few shard rounds, then no refusal
        // anywhere in what the emulator did.
        std::thread::sleep(Duration::from_secs(12));
    });
    let _ = emulate.kill();
    let _ = emulate.wait();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    if let Err(e) = result {
        eprintln!("emulate's log:\n{text}");
        std::panic::resume_unwind(e);
    }
    for line in text.lines() {
        assert!(
            !line.contains("forbidden") && !line.contains("Forbidden"),
            "a request of the emulator was refused: {line}"
        );
    }
    assert!(
        text.contains("shard lease"),
        "the shard lease was never held:\n{text}"
    );
}

#[test]
fn the_image_root_holds_what_the_binary_needs() {
    let root = std::env::temp_dir().join(format!("kubesim-emulate-rootfs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let made = Command::new(repo("scripts/emulate-image"))
        .args(["--binary", env!("CARGO_BIN_EXE_kubesim"), "--rootfs-only"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let run = Command::new("chroot")
        .args(["--userspec=65532:65532"])
        .arg(&root)
        .args(["/kubesim", "emulate", "--help"])
        .output();
    match run {
        Ok(o) if o.status.success() => {
            let help = String::from_utf8_lossy(&o.stdout);
            assert!(help.contains("--kubeconfig"), "{help}");
        }
        Ok(o) if String::from_utf8_lossy(&o.stderr).contains("Operation not permitted") => {
            eprintln!("NOT RUN: chroot needs root here; the image's root was not run");
        }
        Ok(o) => panic!(
            "the image's root does not run the binary: {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => eprintln!("NOT RUN: no chroot ({e}); the image's root was not run"),
    }
    let _ = std::fs::remove_dir_all(&root);
    // The image itself, where a container engine answers.
    let built = Command::new(repo("scripts/emulate-image"))
        .args([
            "--binary",
            env!("CARGO_BIN_EXE_kubesim"),
            "--tag",
            "kubesim-emulate:test",
        ])
        .output()
        .unwrap();
    match built.status.code() {
        Some(0) => runs_as_a_container("kubesim-emulate:test"),
        Some(3) => eprintln!(
            "NOT RUN: building the container image: {}",
            String::from_utf8_lossy(&built.stderr).trim()
        ),
        _ => panic!(
            "the image did not build: {}",
            String::from_utf8_lossy(&built.stderr)
        ),
    }
}

/// The first container engine that answers.
fn engine() -> Option<&'static str> {
    ["docker", "podman"].into_iter().find(|e| {
        Command::new(e)
            .arg("info")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Runs `image` against a `kubesim up` with no emulator of its own, on the
/// host's network, and waits for the nodes it brings up to be Ready.
fn runs_as_a_container(image: &str) {
    let engine = engine().expect("the image was built, so an engine answers");
    let server = tls::start("emulate-image", &["--emulator", "none"]);
    let admin = server.kubeconfig();
    // The image's user is not root: it gets a copy it may read.
    let config = server.dir.join("container-config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::copy(&admin, config.join("kubeconfig")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(
        config.join("kubeconfig"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let name = format!("kubesim-emulate-test-{}", std::process::id());
    let started = Command::new(engine)
        .args(["run", "-d", "--name", &name, "--network", "host", "-v"])
        .arg(format!("{}:/config:ro", config.display()))
        .args([
            image,
            "--kubeconfig",
            "/config/kubeconfig",
            "--nodes",
            "2",
            "--shard",
            "0/1",
        ])
        .output()
        .unwrap();
    assert!(
        started.status.success(),
        "{engine} run: {}",
        String::from_utf8_lossy(&started.stderr)
    );
    let result = std::panic::catch_unwind(|| {
        within(Duration::from_secs(60), "2 Ready nodes", || {
            ready_nodes(&admin) == 2
        });
    });
    let user = Command::new(engine)
        .args(["inspect", "-f", "{{.Config.User}}", &name])
        .output()
        .unwrap();
    let logs = Command::new(engine).args(["logs", &name]).output().unwrap();
    let _ = Command::new(engine).args(["rm", "-f", &name]).output();
    if let Err(e) = result {
        eprintln!(
            "the container's log:\n{}",
            String::from_utf8_lossy(&logs.stderr)
        );
        std::panic::resume_unwind(e);
    }
    assert_eq!(String::from_utf8_lossy(&user.stdout).trim(), "65532:65532");
}
