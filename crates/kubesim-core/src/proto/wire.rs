//! The protobuf wire format: a stream of (field number, wire type, value)
//! records. Only reads; every length is checked against what is left of the
//! input, so nothing is allocated from a length prefix.

/// One field's raw value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

impl Wire<'_> {
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Wire::Varint(_) => "varint",
            Wire::Fixed64(_) => "fixed64",
            Wire::Bytes(_) => "length-delimited",
            Wire::Fixed32(_) => "fixed32",
        }
    }
}

/// Iterates the fields of one message.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(crate) fn varint(&mut self) -> Result<u64, String> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err("truncated varint".into());
            };
            self.pos += 1;
            // The tenth byte may only carry the top bit of a u64.
            if i == 9 && b > 1 {
                return Err("varint overflows 64 bits".into());
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| {
                format!(
                    "truncated: {n} bytes announced, {} left",
                    self.buf.len() - self.pos
                )
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// The next field, or `None` at the end of the message.
    pub(crate) fn field(&mut self) -> Result<Option<(u32, Wire<'a>)>, String> {
        if self.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3)
            .ok()
            .filter(|&n| n != 0 && n < (1 << 29))
            .ok_or_else(|| format!("invalid field number {}", key >> 3))?;
        let value = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => Wire::Fixed64(u64::from_le_bytes(
                self.take(8)?.try_into().unwrap_or_default(),
            )),
            2 => {
                let n = usize::try_from(self.varint()?).map_err(|_| "length overflows")?;
                Wire::Bytes(self.take(n)?)
            }
            5 => Wire::Fixed32(u32::from_le_bytes(
                self.take(4)?.try_into().unwrap_or_default(),
            )),
            // 3 and 4 are the long-deprecated groups; no Kubernetes type uses them.
            t => return Err(format!("unsupported wire type {t} for field {number}")),
        };
        Ok(Some((number, value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_wire_type() {
        let buf = [
            0x08, 0x96, 0x01, // 1: varint 150
            0x11, 1, 0, 0, 0, 0, 0, 0, 0, // 2: fixed64 1
            0x1a, 2, b'h', b'i', // 3: bytes "hi"
            0x25, 2, 0, 0, 0, // 4: fixed32 2
        ];
        let mut r = Reader::new(&buf);
        assert_eq!(r.field(), Ok(Some((1, Wire::Varint(150)))));
        assert_eq!(r.field(), Ok(Some((2, Wire::Fixed64(1)))));
        assert_eq!(r.field(), Ok(Some((3, Wire::Bytes(b"hi")))));
        assert_eq!(r.field(), Ok(Some((4, Wire::Fixed32(2)))));
        assert_eq!(r.field(), Ok(None));
    }

    #[test]
    fn rejects_bad_input() {
        for bad in [
            &[0x08][..],   // varint missing
            &[0x0a, 5, 1], // length past the end
            &[0x0b],       // group start
            &[0x00, 0x00], // field number 0
            &[
                0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
            ], // > 64 bits
            &[
                0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
            ], // huge length
        ] {
            assert!(Reader::new(bad).field().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn negative_int64_takes_ten_bytes() {
        let buf = [
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ];
        assert_eq!(
            Reader::new(&buf).field(),
            Ok(Some((1, Wire::Varint(u64::MAX))))
        );
    }
}
