//! Decoder tests on hand-encoded bodies. Field numbers below are the wire
//! facts from `messages.txt`; the comments name the fields.

use proptest::prelude::*;
use serde_json::json;

use super::*;

/// A tiny protobuf encoder: just enough to build test bodies.
#[derive(Default, Clone)]
struct Enc(Vec<u8>);

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

impl Enc {
    fn new() -> Self {
        Enc::default()
    }
    fn int(mut self, tag: u32, v: i64) -> Self {
        varint(&mut self.0, u64::from(tag) << 3);
        varint(&mut self.0, v as u64);
        self
    }
    fn bytes(mut self, tag: u32, b: &[u8]) -> Self {
        varint(&mut self.0, (u64::from(tag) << 3) | 2);
        varint(&mut self.0, b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
    fn str(self, tag: u32, s: &str) -> Self {
        self.bytes(tag, s.as_bytes())
    }
    fn msg(self, tag: u32, m: Enc) -> Self {
        self.bytes(tag, &m.0)
    }
    /// A `map<string, string>` entry.
    fn entry(self, tag: u32, k: &str, v: &str) -> Self {
        self.msg(tag, Enc::new().str(1, k).str(2, v))
    }
}

/// `k8s\0` + runtime.Unknown{typeMeta, raw, contentEncoding, contentType}.
fn body(api_version: &str, kind: &str, raw: Enc) -> Vec<u8> {
    let unknown = Enc::new()
        .msg(1, Enc::new().str(1, api_version).str(2, kind))
        .msg(2, raw)
        .str(3, "")
        .str(4, "");
    [MAGIC, &unknown.0].concat()
}

/// ObjectMeta as Go writes it: every value field present, even when empty.
fn meta(name: &str) -> Enc {
    Enc::new()
        .str(1, name) // name
        .str(2, "") // generateName
        .str(3, "") // namespace
        .str(5, "") // uid
        .int(7, 0) // generation
        .msg(8, Enc::new()) // creationTimestamp: zero
        .entry(11, "app", name) // labels
}

fn int_or_string_str(s: &str) -> Enc {
    Enc::new().int(1, 1).int(2, 0).str(3, s)
}

fn int_or_string_int(i: i64) -> Enc {
    Enc::new().int(1, 0).int(2, i).str(3, "")
}

#[test]
fn deployment_with_int_or_string_strategy() {
    let container = Enc::new()
        .str(1, "nginx") // name
        .str(2, "nginx") // image
        .str(5, "") // workingDir
        .int(16, 0) // stdin
        .int(17, 0) // stdinOnce
        .int(18, 0); // tty
    let pod_spec = Enc::new()
        .msg(2, container) // containers
        .str(3, "") // restartPolicy
        .int(11, 0) // hostNetwork
        .int(30, 0); // enableServiceLinks: a pointer, explicitly false
    let strategy = Enc::new().str(1, "RollingUpdate").msg(
        2,
        Enc::new()
            .msg(1, int_or_string_int(0)) // maxUnavailable: pointer, explicit 0
            .msg(2, int_or_string_str("25%")), // maxSurge
    );
    let spec = Enc::new()
        .int(1, 0) // replicas: pointer, explicit 0
        .msg(2, Enc::new().entry(1, "app", "web")) // selector.matchLabels
        .msg(3, Enc::new().msg(1, meta("web")).msg(2, pod_spec)) // template
        .msg(4, strategy)
        .int(5, 0) // minReadySeconds: value field
        .int(7, 0); // paused
    let status = Enc::new().int(1, 0).int(2, 0); // observedGeneration, replicas
    let raw = Enc::new().msg(1, meta("web")).msg(2, spec).msg(3, status);
    let v = decode_k8s_protobuf(&body("apps/v1", "Deployment", raw)).unwrap();
    assert_eq!(
        v,
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"name": "web", "labels": {"app": "web"}},
                    "spec": {
                        "containers": [{"name": "nginx", "image": "nginx"}],
                        "enableServiceLinks": false,
                    },
                },
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"},
                },
            },
            "status": {},
        })
    );
    // The envelope's type comes first, as in kubectl's JSON.
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys[..2], ["apiVersion", "kind"]);
}

#[test]
fn secret_bytes_are_base64() {
    let raw = Enc::new()
        .msg(1, meta("s"))
        .msg(2, Enc::new().str(1, "k").bytes(2, b"v\x00\xff")) // data
        .str(3, "") // type: unset
        .msg(4, Enc::new().str(1, "plain").str(2, "text")) // stringData
        .int(5, 0); // immutable: pointer, explicit false
    let v = decode_k8s_protobuf(&body("v1", "Secret", raw)).unwrap();
    assert_eq!(v["data"], json!({"k": "dgD/"}));
    assert_eq!(v["stringData"], json!({"plain": "text"}));
    assert_eq!(v["immutable"], json!(false));
    assert!(v.get("type").is_none());
}

#[test]
fn times_and_micro_times() {
    // 2024-01-02T03:04:05Z with nanoseconds that metav1.Time drops.
    let t = Enc::new().int(1, 1_704_164_645).int(2, 123_456_789);
    let raw = Enc::new().msg(1, meta("cm").msg(8, t.clone()));
    let v = decode_k8s_protobuf(&body("v1", "ConfigMap", raw)).unwrap();
    assert_eq!(
        v["metadata"]["creationTimestamp"],
        json!("2024-01-02T03:04:05Z")
    );

    // events.k8s.io Event: eventTime (2) is a MicroTime,
    // deprecatedFirstTimestamp (13) and deprecatedLastTimestamp (14) Times.
    let raw = Enc::new()
        .msg(1, meta("ev"))
        .msg(2, t.clone())
        .msg(13, t.clone())
        .msg(14, Enc::new().int(1, -62_135_596_800)); // Go's zero time
    let v = decode_k8s_protobuf(&body("events.k8s.io/v1", "Event", raw)).unwrap();
    assert_eq!(v["eventTime"], json!("2024-01-02T03:04:05.123456Z"));
    assert_eq!(v["deprecatedFirstTimestamp"], json!("2024-01-02T03:04:05Z"));
    assert!(v.get("deprecatedLastTimestamp").is_none());
}

#[test]
fn raw_extension_is_embedded_json() {
    let raw = Enc::new()
        .msg(1, meta("rev"))
        .msg(2, Enc::new().bytes(1, br#"{"spec":{"replicas":3}}"#)) // data
        .int(3, 7); // revision
    let v = decode_k8s_protobuf(&body("apps/v1", "ControllerRevision", raw)).unwrap();
    assert_eq!(v["data"], json!({"spec": {"replicas": 3}}));
    assert_eq!(v["revision"], json!(7));

    // A protobuf object inside a raw extension decodes too.
    let inner = body(
        "v1",
        "ConfigMap",
        Enc::new().msg(1, meta("cm")).entry(2, "a", "b"),
    );
    let raw = Enc::new()
        .msg(1, meta("rev"))
        .msg(2, Enc::new().bytes(1, &inner));
    let v = decode_k8s_protobuf(&body("apps/v1", "ControllerRevision", raw)).unwrap();
    assert_eq!(v["data"]["kind"], json!("ConfigMap"));
    assert_eq!(v["data"]["data"], json!({"a": "b"}));

    let raw = Enc::new().msg(2, Enc::new().bytes(1, b"{not json"));
    let e = decode_k8s_protobuf(&body("apps/v1", "ControllerRevision", raw)).unwrap_err();
    assert!(e.to_string().starts_with("data: embedded JSON"), "{e}");
}

#[test]
fn delete_options_of_any_version_keep_explicit_zero() {
    let raw = Enc::new().int(1, 0).str(4, "Background"); // gracePeriodSeconds, propagationPolicy
    let v = decode_k8s_protobuf(&body("v1", "DeleteOptions", raw)).unwrap();
    assert_eq!(
        v,
        json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, "propagationPolicy": "Background"})
    );
}

#[test]
fn embedded_structs_are_inlined() {
    // EnvVar{name, valueFrom: EnvVarSource{secretKeyRef: SecretKeySelector{
    // LocalObjectReference{name} (1), key (2)}}}
    let selector = Enc::new()
        .msg(1, Enc::new().str(1, "creds"))
        .str(2, "password");
    let env = Enc::new().str(1, "PW").msg(3, Enc::new().msg(4, selector));
    let pod = Enc::new()
        .msg(1, meta("p"))
        .msg(2, Enc::new().msg(2, Enc::new().str(1, "c").msg(7, env)));
    let v = decode_k8s_protobuf(&body("v1", "Pod", pod)).unwrap();
    assert_eq!(
        v["spec"]["containers"][0]["env"][0],
        json!({"name": "PW", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}})
    );
}

#[test]
fn unknown_fields_are_skipped_and_packed_numbers_read() {
    let raw = Enc::new()
        .msg(1, meta("cm"))
        .int(99, 5)
        .bytes(98, b"whatever")
        .entry(2, "k", "v");
    let v = decode_k8s_protobuf(&body("v1", "ConfigMap", raw)).unwrap();
    assert_eq!(v["data"], json!({"k": "v"}));

    // PodFailurePolicyOnExitCodesRequirement.values (3) is a repeated int32.
    let mut packed = Vec::new();
    for n in [1u64, 2, 300] {
        varint(&mut packed, n);
    }
    let rule = Enc::new()
        .str(1, "FailJob")
        .msg(2, Enc::new().str(2, "In").bytes(3, &packed).int(3, 4));
    let job = Enc::new()
        .msg(1, meta("j"))
        .msg(2, Enc::new().msg(11, Enc::new().msg(1, rule)));
    let v = decode_k8s_protobuf(&body("batch/v1", "Job", job)).unwrap();
    assert_eq!(
        v["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"],
        json!([1, 2, 300, 4])
    );
}

#[test]
fn errors_are_clear() {
    let e = decode_k8s_protobuf(b"{}").unwrap_err();
    assert_eq!(e, ProtoError::NoMagic);

    let e = decode_k8s_protobuf(&body("example.com/v1", "Widget", Enc::new())).unwrap_err();
    assert!(matches!(e, ProtoError::UnknownKind { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "no kind \"Widget\" is registered for version \"example.com/v1\" in protobuf"
    );

    let e = decode_k8s_protobuf(&body("", "", Enc::new())).unwrap_err();
    assert_eq!(e.to_string(), "Object 'Kind' is missing");

    // A string field sent as a varint, deep inside.
    let raw = Enc::new().msg(1, Enc::new().int(1, 5));
    let e = decode_k8s_protobuf(&body("v1", "ConfigMap", raw)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "metadata.name: varint value for a string field"
    );

    let mut truncated = body("v1", "ConfigMap", Enc::new().msg(1, meta("x")));
    truncated.truncate(truncated.len() - 3);
    assert!(matches!(
        decode_k8s_protobuf(&truncated),
        Err(ProtoError::Malformed { .. })
    ));

    let gz = [
        MAGIC,
        &Enc::new()
            .msg(1, Enc::new().str(1, "v1").str(2, "ConfigMap"))
            .str(3, "gzip")
            .0,
    ]
    .concat();
    assert!(matches!(
        decode_k8s_protobuf(&gz),
        Err(ProtoError::Unsupported(_))
    ));
}

/// A CRD whose one version (spec.versions, 7) has `schema` as its
/// openAPIV3Schema (version.schema 4, then field 1).
fn crd_with_schema(schema: Enc) -> Enc {
    let version = Enc::new().str(1, "v1").msg(4, Enc::new().msg(1, schema));
    Enc::new().msg(2, Enc::new().msg(7, version))
}

#[test]
fn nesting_is_bounded() {
    // JSONSchemaProps.not (28) nests without limit on the wire.
    let mut schema = Enc::new().str(5, "object");
    for _ in 0..200 {
        schema = Enc::new().msg(28, schema);
    }
    let crd = crd_with_schema(schema);
    let e = decode_k8s_protobuf(&body(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        crd,
    ))
    .unwrap_err();
    assert!(e.to_string().contains("nested deeper than"), "{e}");

    // Raw extensions that embed protobuf objects share the same bound.
    let mut b = body("v1", "ConfigMap", Enc::new());
    for _ in 0..200 {
        b = body(
            "apps/v1",
            "ControllerRevision",
            Enc::new().msg(2, Enc::new().bytes(1, &b)),
        );
    }
    assert!(decode_k8s_protobuf(&b).is_err());
}

#[test]
fn crd_schema_wrappers_take_their_json_forms() {
    let string_schema = Enc::new().str(5, "string");
    let props = Enc::new()
        .str(5, "object")
        .msg(29, Enc::new().str(1, "name").msg(2, string_schema.clone())) // properties
        .msg(30, Enc::new().int(1, 1)) // additionalProperties: true
        .msg(24, Enc::new().msg(1, string_schema.clone())) // items: one schema
        .msg(8, Enc::new().bytes(1, b"{\"a\":1}")); // default
    let crd = crd_with_schema(props);
    let v = decode_k8s_protobuf(&body(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        crd,
    ))
    .unwrap();
    let s = &v["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    assert_eq!(s["properties"]["name"], json!({"type": "string"}));
    assert_eq!(s["additionalProperties"], json!(true));
    assert_eq!(s["items"], json!({"type": "string"}));
    assert_eq!(s["default"], json!({"a": 1}));
}

#[test]
fn table_covers_every_served_builtin_kind() {
    let t = table::table();
    for r in crate::Registry::new().all() {
        // metrics.k8s.io comes from an aggregated server upstream, has no
        // protobuf messages in k8s.io/api, and no client writes it with
        // protobuf: such bodies get a 415.
        if r.is_custom() || r.group == "metrics.k8s.io" {
            continue;
        }
        let api_version = if r.group.is_empty() {
            r.version.clone()
        } else {
            format!("{}/{}", r.group, r.version)
        };
        assert!(
            t.kind(&api_version, &r.kind).is_some(),
            "{api_version} {}",
            r.kind
        );
    }
    assert!(t.kind("policy/v1", "Eviction").is_some());
    assert!(t.kind("autoscaling/v1", "Scale").is_some());
    assert!(t.kinds().count() > 50);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Arbitrary bytes after the magic never panic.
    #[test]
    fn arbitrary_bodies_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_k8s_protobuf(&[MAGIC, &tail].concat());
    }

    /// Nor do corruptions of a valid deployment body.
    #[test]
    fn corrupted_bodies_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let spec = Enc::new()
            .int(1, 2)
            .msg(4, Enc::new().msg(2, Enc::new().msg(2, int_or_string_str("25%"))));
        let mut b = body("apps/v1", "Deployment", Enc::new().msg(1, meta("web")).msg(2, spec));
        for (i, byte) in edits {
            let i = i.index(b.len());
            b[i] = byte;
        }
        b.truncate(cut.index(b.len() + 1));
        let _ = decode_k8s_protobuf(&b);
    }
}
