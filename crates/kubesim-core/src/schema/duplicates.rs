//! Duplicate keys in a JSON body. Parsing into a value keeps the last of
//! them silently; upstream's strict decoder reports each, by its field
//! path (`duplicate field "metadata.name"`), and `fieldValidation` decides
//! whether that fails the request or only warns.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The field paths of `body`'s duplicated keys, in order; empty when the
/// body is not JSON (its parser reports that).
pub fn duplicate_fields(body: &[u8]) -> Vec<String> {
    let mut path = Vec::new();
    let mut out = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(body);
    let scan = Scan {
        path: &mut path,
        out: &mut out,
        depth: 0,
    };
    if scan.deserialize(&mut de).is_err() {
        return Vec::new();
    }
    out
}

/// Nesting beyond this is not looked into (serde_json refuses deeper
/// input anyway).
const MAX_DEPTH: usize = 100;

struct Scan<'p, 'de> {
    /// Field names from the root; list items add none, as in Go's paths.
    path: &'p mut Vec<Cow<'de, str>>,
    out: &'p mut Vec<String>,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Scan<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Scan<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: Vec<Cow<'de, str>> = Vec::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if seen.contains(&key) {
                let mut p: Vec<&str> = self.path.iter().map(|s| s.as_ref()).collect();
                p.push(&key);
                self.out.push(p.join("."));
            } else {
                seen.push(key.clone());
            }
            if self.depth >= MAX_DEPTH {
                map.next_value::<serde::de::IgnoredAny>()?;
                continue;
            }
            self.path.push(key);
            let r = map.next_value_seed(Scan {
                path: self.path,
                out: self.out,
                depth: self.depth + 1,
            });
            self.path.pop();
            r?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if self.depth >= MAX_DEPTH {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            return Ok(());
        }
        while seq
            .next_element_seed(Scan {
                path: self.path,
                out: self.out,
                depth: self.depth + 1,
            })?
            .is_some()
        {}
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::duplicate_fields;

    #[test]
    fn finds_duplicates_by_path() {
        let body = br#"{"kind": "Pod", "metadata": {"name": "a", "name": "b"},
            "spec": {"containers": [{"name": "c", "image": "i", "image": "j"}]}, "kind": "Pod"}"#;
        assert_eq!(
            duplicate_fields(body),
            vec!["metadata.name", "spec.containers.image", "kind"]
        );
        assert!(duplicate_fields(br#"{"a": {"b": 1}, "c": {"b": 2}}"#).is_empty());
        assert!(duplicate_fields(b"not json").is_empty());
    }
}
