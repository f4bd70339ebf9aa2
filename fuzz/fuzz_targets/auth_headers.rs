#![no_main]
//! Authentication and impersonation on arbitrary headers. The input is
//! read as `Name: value` lines; a line `T` stands for a valid service
//! account token. Whatever the headers, nothing may panic, no request
//! without the admin token may become a member of `system:masters`, and a
//! bearer token other than the admin's may only ever be a service account.

use std::sync::{Arc, OnceLock};

use http::{HeaderMap, HeaderName, HeaderValue};
use kubesim_apiserver::auth::authn::Config;
use kubesim_apiserver::Server;
use kubesim_runtime::{Clock, Rng, WriteOptions};
use kubesim_store::{MemStore, Store};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

const ADMIN: &str = "admin-token";

fn setup() -> &'static (Arc<Server>, String) {
    static S: OnceLock<(Arc<Server>, String)> = OnceLock::new();
    S.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
            let epoch = jiff::Timestamp::constant(1_767_225_600, 0);
            let server = Server::new(store, Clock::simulated(epoch), Rng::seeded(1));
            server.bootstrap().await.expect("bootstrap");
            server.enable_rbac(true);
            let sa = server.resource("", "v1", "serviceaccounts").unwrap();
            let caller = Default::default();
            server
                .create(&sa, "default", json!({"metadata": {"name": "bot"}}), &WriteOptions::default(), &caller)
                .await
                .expect("service account");
            let token = server
                .create_token("default", "bot", &json!({"spec": {}}))
                .expect("token")["status"]["token"]
                .as_str()
                .unwrap()
                .to_string();
            (server, token)
        })
    })
}

fuzz_target!(|data: &[u8]| {
    let (server, token) = setup();
    let text = String::from_utf8_lossy(data);
    let mut headers = HeaderMap::new();
    for line in text.lines() {
        let (name, value) = match line {
            "T" => ("authorization", format!("Bearer {token}")),
            _ => match line.split_once(':') {
                Some((n, v)) => (n, v.trim().to_string()),
                None => continue,
            },
        };
        let (Ok(n), Ok(v)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) else {
            continue;
        };
        headers.append(n, v);
    }
    let config = Config::tls(ADMIN.to_string());
    let admin_sent = headers
        .get_all("authorization")
        .iter()
        .any(|v| v.as_bytes().ends_with(ADMIN.as_bytes()));
    let Ok(user) = server.authenticate(&config, &headers, None) else {
        return;
    };
    if !admin_sent {
        assert!(!user.is_privileged(), "{user:?} from {headers:?}");
        if headers.contains_key("authorization") && user.name != "system:anonymous" {
            assert!(user.name.starts_with("system:serviceaccount:"), "{user:?}");
        }
    }
    if let Ok(acting) = server.impersonate(user.clone(), &headers) {
        if !user.is_privileged() {
            // Without the impersonate verb, nobody becomes someone else.
            assert_eq!(acting.name, user.name, "{headers:?}");
            assert!(!acting.is_privileged());
        }
    }
});
