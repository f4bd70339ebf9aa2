//! Stable names for pod templates: the `pod-template-hash` of a
//! Deployment's ReplicaSets and the revision hashes of StatefulSets and
//! DaemonSets.
//!
//! Upstream hashes its in-memory Go structure; we hash what we have, the
//! template's JSON, serialized canonically (object keys sorted, no
//! whitespace) so that key order never changes the hash. The 32-bit FNV-1a
//! value is written in decimal and each digit is mapped onto the same
//! vowel-free alphabet generated names use, as upstream's safe encoding
//! does, so a hash never spells a word and is a valid label value.

use serde_json::Value;

/// Digits of the safe encoding: 27 characters without vowels or look-alikes.
const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

const FNV_OFFSET: u32 = 0x811c_9dc5;
const FNV_PRIME: u32 = 0x0100_0193;

/// FNV-1a over `bytes`, continuing from `h`.
fn fnv1a(mut h: u32, bytes: &[u8]) -> u32 {
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// `v` serialized with object keys in sorted order. Fields set to null
/// are left out: clients that decode into typed structs send
/// `creationTimestamp: null` for what others omit, and both mean absent.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, _)| k)
                .collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Maps each character onto the safe alphabet by its byte value.
pub fn safe_encode(s: &str) -> String {
    s.bytes()
        .map(|b| SAFE_ALPHABET[usize::from(b) % SAFE_ALPHABET.len()] as char)
        .collect()
}

/// The hash of a pod template. A collision count (bumped when a name made
/// from the hash is taken by something else) is mixed in as four
/// little-endian bytes, so each bump gives a new name; a count of zero is
/// the same as none, so writing `collisionCount: 0` changes nothing.
pub fn template_hash(template: &Value, collision_count: Option<i64>) -> String {
    let mut h = fnv1a(FNV_OFFSET, canonical_json(template).as_bytes());
    if let Some(c) = collision_count.filter(|&c| c > 0) {
        h = fnv1a(h, &(c as u32).to_le_bytes());
    }
    safe_encode(&h.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fnv1a_matches_published_vectors() {
        // Reference values of 32-bit FNV-1a: "" is the offset basis,
        // "a" is 0xe40c292c, "foobar" is 0xbf9cf968.
        assert_eq!(fnv1a(FNV_OFFSET, b""), 0x811c9dc5);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xe40c292c);
        assert_eq!(fnv1a(FNV_OFFSET, b"foobar"), 0xbf9cf968);
    }

    #[test]
    fn encoding_maps_digits_by_byte_value() {
        // '0' is byte 48, 48 % 27 = 21 -> '4'; '1' -> 22 -> '5'; '9' -> 57 % 27 = 3 -> 'f' (b, c, d, f).
        assert_eq!(safe_encode("019"), "45f");
    }

    #[test]
    fn key_order_does_not_change_the_hash() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":[1,{"q":2,"p":3}],"x":"s"}}"#).unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":"s","y":[1,{"p":3,"q":2}]},"b":1}"#).unwrap();
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":"s","y":[1,{"p":3,"q":2}]},"b":1}"#
        );
        assert_eq!(template_hash(&a, None), template_hash(&b, None));
        let with_null: Value =
            serde_json::from_str(r#"{"b":1,"c":null,"a":{"y":[1,{"q":2,"p":3}],"x":"s"}}"#)
                .unwrap();
        assert_eq!(template_hash(&a, None), template_hash(&with_null, None));
        assert_ne!(template_hash(&a, None), template_hash(&a, Some(1)));
        assert_eq!(template_hash(&a, None), template_hash(&a, Some(0)));
        assert_ne!(
            template_hash(&json!({"spec": {"image": "a"}}), None),
            template_hash(&json!({"spec": {"image": "b"}}), None)
        );
        assert!(template_hash(&a, None)
            .bytes()
            .all(|c| SAFE_ALPHABET.contains(&c)));
    }
}
