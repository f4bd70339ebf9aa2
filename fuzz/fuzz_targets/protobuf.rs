#![no_main]

use kubesim_core::proto::decode_k8s_protobuf;
use libfuzzer_sys::fuzz_target;

/// Kinds whose messages reach most of the decoder: deep pod specs, bytes
/// maps, raw extensions and the recursive CRD schema.
const KINDS: &[(&str, &str)] = &[
    ("apps/v1", "Deployment"),
    ("v1", "Pod"),
    ("v1", "Secret"),
    ("apps/v1", "ControllerRevision"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("events.k8s.io/v1", "Event"),
    ("v1", "DeleteOptions"),
];

fn field(out: &mut Vec<u8>, tag: u8, b: &[u8]) {
    out.push((tag << 3) | 2);
    let mut n = b.len();
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out.extend_from_slice(b);
}

fuzz_target!(|data: &[u8]| {
    // A first byte naming a kind wraps the rest as that kind's object, so
    // the fuzzer need not rediscover the envelope; otherwise the input is
    // the whole body after the magic.
    let mut body = b"k8s\0".to_vec();
    match data.split_first() {
        Some((&i, raw)) if usize::from(i) < KINDS.len() => {
            let (api_version, kind) = KINDS[usize::from(i)];
            let mut type_meta = Vec::new();
            field(&mut type_meta, 1, api_version.as_bytes());
            field(&mut type_meta, 2, kind.as_bytes());
            field(&mut body, 1, &type_meta);
            field(&mut body, 2, raw);
        }
        _ => body.extend_from_slice(data),
    }
    if let Ok(v) = decode_k8s_protobuf(&body) {
        assert!(v.get("kind").is_some_and(|k| k.is_string()), "{v}");
        serde_json::to_vec(&v).expect("decoded values serialize");
    }
});
