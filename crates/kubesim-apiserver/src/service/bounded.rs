//! A map of at most `N` entries that drops the oldest inserted first: what
//! is made ahead for requests that may never come (decodes, prepared
//! updates and creates) must not pile up.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

pub(crate) struct Bounded<K, V, const N: usize> {
    /// Each value with the insertion that put it there.
    entries: HashMap<K, (u64, V)>,
    /// Every insertion in order, for dropping the oldest; one whose key
    /// was removed or inserted again since is skipped.
    order: VecDeque<(K, u64)>,
    next: u64,
}

impl<K, V, const N: usize> Default for Bounded<K, V, N> {
    fn default() -> Self {
        Bounded {
            entries: HashMap::new(),
            order: VecDeque::new(),
            next: 0,
        }
    }
}

impl<K: Hash + Eq + Clone, V, const N: usize> Bounded<K, V, N> {
    /// Keeps `v` for `k`; returns what no longer is kept: the value it
    /// replaced and those dropped beyond the bound, for the caller to free
    /// where it likes.
    pub fn insert(&mut self, k: K, v: V) -> Vec<V> {
        let seq = self.next;
        self.next += 1;
        self.order.push_back((k.clone(), seq));
        let mut gone: Vec<V> = self
            .entries
            .insert(k, (seq, v))
            .map(|(_, old)| old)
            .into_iter()
            .collect();
        while self.entries.len() > N || self.order.len() > 2 * N {
            let Some((k, seq)) = self.order.pop_front() else {
                break;
            };
            if self.entries.get(&k).is_some_and(|(s, _)| *s == seq) {
                gone.extend(self.entries.remove(&k).map(|(_, v)| v));
            }
        }
        gone
    }

    pub fn contains_key(&self, k: &K) -> bool {
        self.entries.contains_key(k)
    }

    pub fn get(&self, k: &K) -> Option<&V> {
        self.entries.get(k).map(|(_, v)| v)
    }

    pub fn remove(&mut self, k: &K) -> Option<V> {
        self.entries.remove(k).map(|(_, v)| v)
    }

    /// The value of `k`, taken if `want` says so.
    pub fn remove_if(&mut self, k: &K, want: impl FnOnce(&V) -> bool) -> Option<V> {
        if !want(self.get(k)?) {
            return None;
        }
        self.remove(k)
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_inserted_go_beyond_the_bound() {
        let mut m: Bounded<u32, u32, 3> = Bounded::default();
        for k in 0..3 {
            assert!(m.insert(k, k * 10).is_empty());
        }
        // Inserted again: the newest, and the old value is handed back.
        assert_eq!(m.insert(0, 1), vec![0]);
        // Beyond the bound the oldest insertion still in place goes: 1.
        assert_eq!(m.insert(3, 30), vec![10]);
        assert_eq!(m.len(), 3);
        assert!(!m.contains_key(&1));
        assert_eq!(m.get(&0), Some(&1));
        assert_eq!(m.remove_if(&2, |v| *v == 0), None);
        assert_eq!(m.remove_if(&2, |v| *v == 20), Some(20));
        assert_eq!(m.remove(&0), Some(1));
        // Removed keys leave their insertions behind; they are skipped.
        for k in 10..20 {
            m.insert(k, k);
        }
        assert_eq!(m.len(), 3);
        assert!(m.contains_key(&19) && !m.contains_key(&3));
        assert!(!m.is_empty());
    }
}
