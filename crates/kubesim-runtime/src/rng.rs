//! The one seeded random generator: names, uids, jitter.

use std::sync::Arc;

use parking_lot::Mutex;
use rand::{Rng as _, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Shared, seeded, thread-safe. Clones draw from the same sequence.
#[derive(Clone)]
pub struct Rng {
    inner: Arc<Mutex<ChaCha8Rng>>,
}

/// The alphabet of generated name suffixes: no vowels (no accidental words)
/// and no look-alike characters, as upstream uses.
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

impl Rng {
    pub fn seeded(seed: u64) -> Self {
        Rng {
            inner: Arc::new(Mutex::new(ChaCha8Rng::seed_from_u64(seed))),
        }
    }

    /// A random suffix of `n` characters for `generateName`.
    pub fn suffix(&self, n: usize) -> String {
        let mut r = self.inner.lock();
        (0..n)
            .map(|_| SUFFIX_ALPHABET[r.random_range(0..SUFFIX_ALPHABET.len())] as char)
            .collect()
    }

    /// A version-4 UUID drawn from the seeded sequence.
    pub fn uuid(&self) -> String {
        let mut b = [0u8; 16];
        self.inner.lock().fill_bytes(&mut b);
        // Sets the version and variant bits, and writes the text in one
        // string (every create draws a uid).
        uuid::Builder::from_random_bytes(b).into_uuid().to_string()
    }

    /// Uniform in [0, n).
    pub fn below(&self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        self.inner.lock().random_range(0..n)
    }

    /// A generator of its own, seeded by a draw from this one: what it
    /// draws does not depend on when, or on which thread, it draws.
    pub fn fork(&self) -> Rng {
        Rng::seeded(self.inner.lock().next_u64())
    }

    pub fn unit(&self) -> f64 {
        self.inner.lock().random::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let a = Rng::seeded(7);
        let b = Rng::seeded(7);
        assert_eq!(a.suffix(5), b.suffix(5));
        assert_eq!(a.uuid(), b.uuid());
        let u = a.uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
    }

    #[test]
    fn uuids_are_the_drawn_bytes_in_the_usual_groups() {
        let a = Rng::seeded(11);
        let b = Rng::seeded(11);
        for _ in 0..50 {
            let mut bytes = [0u8; 16];
            b.inner.lock().fill_bytes(&mut bytes);
            bytes[6] = (bytes[6] & 0x0f) | 0x40;
            bytes[8] = (bytes[8] & 0x3f) | 0x80;
            let h: String = bytes.iter().map(|x| format!("{x:02x}")).collect();
            let want = format!(
                "{}-{}-{}-{}-{}",
                &h[0..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..32]
            );
            assert_eq!(a.uuid(), want);
        }
    }
}
