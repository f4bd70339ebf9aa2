//! Go's `encoding/base64` standard decoding, for `[]byte` fields (a
//! Secret's `data`): which inputs it refuses and at which byte, so that a
//! refused write reads as upstream's (`illegal base64 data at input byte 4`).

fn value(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'+' || c == b'/'
}

fn newline(c: u8) -> bool {
    c == b'\n' || c == b'\r'
}

fn corrupt(at: usize) -> Result<(), String> {
    Err(format!("illegal base64 data at input byte {at}"))
}

/// Whether Go's `base64.StdEncoding.Decode` accepts `s` (padding
/// required, newlines skipped, trailing bits not checked).
pub fn check(s: &str) -> Result<(), String> {
    let src = s.as_bytes();
    let mut si = 0;
    while si < src.len() {
        // One quantum of up to four symbols.
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(());
                }
                return corrupt(si - j);
            }
            let c = src[si];
            si += 1;
            if value(c) {
                j += 1;
                continue;
            }
            if newline(c) {
                continue;
            }
            if c != b'=' {
                return corrupt(si - 1);
            }
            match j {
                0 | 1 => return corrupt(si - 1),
                2 => {
                    while si < src.len() && newline(src[si]) {
                        si += 1;
                    }
                    if si == src.len() {
                        return corrupt(src.len());
                    }
                    if src[si] != b'=' {
                        return corrupt(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && newline(src[si]) {
                si += 1;
            }
            if si < src.len() {
                return corrupt(si);
            }
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn accepts_what_go_accepts() {
        for ok in ["", "YQ==", "YWI=", "YWJj", "YWJj\nZGVm", "YQ==\n"] {
            assert_eq!(check(ok), Ok(()), "{ok:?}");
        }
    }

    #[test]
    fn refuses_at_gos_offsets() {
        let at = |s: &str| check(s).unwrap_err();
        assert_eq!(at("abc"), "illegal base64 data at input byte 0");
        assert_eq!(at("a"), "illegal base64 data at input byte 0");
        assert_eq!(at("ab!d"), "illegal base64 data at input byte 2");
        assert_eq!(at("YQ="), "illegal base64 data at input byte 3");
        assert_eq!(at("YQ==YQ=="), "illegal base64 data at input byte 4");
        assert_eq!(at("Y==="), "illegal base64 data at input byte 1");
        assert_eq!(at("hello world"), "illegal base64 data at input byte 5");
    }
}
