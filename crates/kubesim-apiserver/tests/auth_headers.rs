//! Authentication and impersonation on arbitrary headers: nothing panics,
//! only the admin token makes a member of `system:masters`, any other
//! accepted bearer token is a service account, and nobody without the
//! `impersonate` verb becomes someone else. Also the token checks one by
//! one: expiry on the server's clock, audience, and the bound objects.

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};
use kubesim_apiserver::auth::authn::Config;
use kubesim_apiserver::Server;
use kubesim_runtime::{Clock, Rng, WriteOptions};
use kubesim_store::{MemStore, Store};
use proptest::prelude::*;
use serde_json::{json, Value};

const ADMIN: &str = "the-admin-token";

async fn server() -> Arc<Server> {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let epoch = jiff::Timestamp::constant(1_767_225_600, 0);
    let server = Server::new(store, Clock::simulated(epoch), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    server.enable_rbac(true);
    for (plural, obj) in [
        ("serviceaccounts", json!({"metadata": {"name": "bot"}})),
        (
            "pods",
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        ),
    ] {
        let r = server.resource("", "v1", plural).unwrap();
        server
            .create(
                &r,
                "default",
                obj,
                &WriteOptions::default(),
                &Default::default(),
            )
            .await
            .expect("create");
    }
    server
}

fn token(s: &Server, spec: Value) -> String {
    s.create_token("default", "bot", &json!({"spec": spec}))
        .expect("token")["status"]["token"]
        .as_str()
        .unwrap()
        .to_string()
}

fn bearer(t: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        "authorization",
        HeaderValue::try_from(format!("Bearer {t}")).unwrap(),
    );
    h
}

#[tokio::test(start_paused = true)]
async fn tokens_are_checked_one_by_one() {
    let s = server().await;
    let config = Config::tls(ADMIN.into());
    let t = token(&s, json!({"expirationSeconds": 600}));
    let user = s.authenticate(&config, &bearer(&t), None).expect("valid");
    assert_eq!(user.name, "system:serviceaccount:default:bot");
    assert!(user
        .groups
        .contains(&"system:serviceaccounts:default".to_string()));
    // Expired on the server's clock.
    tokio::time::advance(Duration::from_secs(601)).await;
    assert_eq!(
        s.authenticate(&config, &bearer(&t), None).unwrap_err().code,
        401
    );
    // Another audience.
    let other = token(&s, json!({"audiences": ["vault"]}));
    assert_eq!(
        s.authenticate(&config, &bearer(&other), None)
            .unwrap_err()
            .code,
        401
    );
    // Bound to a pod: valid while the pod is.
    let bound = token(
        &s,
        json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}}),
    );
    let user = s
        .authenticate(&config, &bearer(&bound), None)
        .expect("bound");
    assert_eq!(
        user.extra["authentication.kubernetes.io/pod-name"],
        vec!["p".to_string()]
    );
    let pods = s.resource("", "v1", "pods").unwrap();
    let opts = kubesim_runtime::DeleteOptions {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    s.delete(&pods, "default", "p", &opts)
        .await
        .expect("delete");
    assert_eq!(
        s.authenticate(&config, &bearer(&bound), None)
            .unwrap_err()
            .code,
        401
    );
    // No credentials: anonymous, or 401 without anonymous access.
    assert_eq!(
        s.authenticate(&config, &HeaderMap::new(), None)
            .unwrap()
            .name,
        "system:anonymous"
    );
    let closed = Config {
        anonymous: false,
        ..config
    };
    assert_eq!(
        s.authenticate(&closed, &HeaderMap::new(), None)
            .unwrap_err()
            .code,
        401
    );
}

fn header_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("authorization".to_string()),
        Just("impersonate-user".to_string()),
        Just("impersonate-group".to_string()),
        Just("impersonate-uid".to_string()),
        "impersonate-extra-[a-z%0-9]{0,8}",
        "[a-z-]{1,12}",
    ]
}

/// The value of one header: `kind` picks a shape built around a valid
/// token (`valid`), `at` where to change it, `free` any printable text.
fn header_value(kind: u8, at: u8, free: &str, valid: &str) -> String {
    match kind {
        0 => format!("Bearer {valid}"),
        1 => {
            let mut b = valid.as_bytes().to_vec();
            let i = usize::from(at) % b.len();
            b[i] = if b[i] == b'A' { b'B' } else { b'A' };
            format!("Bearer {}", String::from_utf8_lossy(&b))
        }
        2 => "Bearer ".to_string(),
        3 => format!("bearer {ADMIN}x"),
        4 => "system:masters".to_string(),
        5 => "system:serviceaccount:default:bot".to_string(),
        _ => free.to_string(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn headers_never_grant_more_than_they_should(
        picks in proptest::collection::vec((header_name(), 0u8..7, any::<u8>(), "[ -~]{0,40}"), 0..6),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let s = rt.block_on(server());
        let valid = token(&s, json!({}));
        let mut headers = HeaderMap::new();
        for (name, kind, at, free) in &picks {
            let v = header_value(*kind, *at, free, &valid);
            if let (Ok(n), Ok(v)) = (HeaderName::try_from(name.as_str()), HeaderValue::try_from(v)) {
                headers.append(n, v);
            }
        }
        let config = Config::tls(ADMIN.into());
        if let Ok(user) = s.authenticate(&config, &headers, None) {
            prop_assert!(!user.is_privileged(), "{user:?} from {headers:?}");
            if user.name != "system:anonymous" {
                prop_assert_eq!(&user.name, "system:serviceaccount:default:bot");
            }
            if let Ok(acting) = s.impersonate(user.clone(), &headers) {
                prop_assert_eq!(&acting.name, &user.name);
                prop_assert!(!acting.is_privileged());
            }
        }
    }
}

/// A component in the process acting as its own user is held to its role
/// when RBAC is on, and trusted when it is off.
#[tokio::test]
async fn in_process_identities_are_held_to_their_roles() {
    use kubesim_apiserver::auth::UserInfo;
    use kubesim_apiserver::inprocess::InProcess;
    use kubesim_runtime::{Api, ResourceRef};
    let s = server().await;
    let scheduler = InProcess::as_user(
        s.clone(),
        "default-scheduler",
        UserInfo::authenticated("system:kube-scheduler", vec![]),
    );
    let (pods, secrets) = (ResourceRef::core("pods"), ResourceRef::core("secrets"));
    scheduler
        .list(&pods, "", &Default::default())
        .await
        .expect("pods");
    let e = scheduler
        .list(&secrets, "default", &Default::default())
        .await
        .unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "secrets is forbidden: User \"system:kube-scheduler\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\""
    );
    let cm = json!({"metadata": {"name": "x"}});
    let configmaps = ResourceRef::core("configmaps");
    assert_eq!(
        scheduler
            .create(&configmaps, "default", cm.clone(), &Default::default())
            .await
            .unwrap_err()
            .code,
        403
    );
    s.enable_rbac(false);
    scheduler
        .create(&configmaps, "default", cm, &Default::default())
        .await
        .expect("AlwaysAllow");
}
