//! Index attributes: a record's strings packed into one allocation.
//!
//! A pod has some thirty attribute strings (selectable field names and
//! values, label keys and values). Kept as one boxed string each, they cost
//! an allocation apiece, about 1.3 KB per record; packed, about 300 bytes.

/// Caller-defined index attributes of a record (e.g. labels and selectable
/// field values, flattened). The store keeps them next to the bytes so
/// selectors can be evaluated without parsing the object.
///
/// Each string is preceded by its length as an LEB128 varint, so short
/// strings cost one byte of framing and any string can be held.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Attrs(Box<[u8]>);

impl Attrs {
    pub fn new<'a>(items: impl IntoIterator<Item = &'a str>) -> Self {
        let mut buf = Vec::new();
        for s in items {
            let mut n = s.len();
            loop {
                let low = (n & 0x7f) as u8;
                n >>= 7;
                if n == 0 {
                    buf.push(low);
                    break;
                }
                buf.push(low | 0x80);
            }
            buf.extend_from_slice(s.as_bytes());
        }
        Attrs(buf.into_boxed_slice())
    }

    /// The strings, in the order they were given.
    pub fn iter(&self) -> Iter<'_> {
        Iter { rest: &self.0 }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Attrs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

pub struct Iter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let mut len = 0usize;
        let mut shift = 0;
        loop {
            let (&b, rest) = self.rest.split_first()?;
            self.rest = rest;
            len |= usize::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        let (s, rest) = self.rest.split_at_checked(len)?;
        self.rest = rest;
        // Built from `&str`s only, so every string is whole UTF-8.
        std::str::from_utf8(s).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_empty_short_and_long_strings() {
        let long = "x".repeat(300);
        let items = ["spec.nodeName", "", "", "app", long.as_str(), "é"];
        let a = Attrs::new(items);
        assert_eq!(a.iter().collect::<Vec<_>>(), items);
        assert!(Attrs::new([]).is_empty());
        assert_eq!(Attrs::default().iter().count(), 0);
    }
}
