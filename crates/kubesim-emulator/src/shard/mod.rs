//! Sharding: several emulators, in processes on one machine or several,
//! split the emulated nodes between them. Each shard holds a Lease; the
//! live shards divide the node names by rendezvous hashing, so a name's
//! owner depends only on its name and the set of live shards. When a shard
//! dies, only its nodes move (to the survivors), and they move back when
//! it returns; the shard count can change at run time the same way.

mod membership;

use std::fmt;
use std::sync::Arc;

use parking_lot::RwLock;
use tokio::sync::watch;

pub use membership::{hold, release, ShardLease};

/// The shards this emulator knows to be live, and its own index.
pub struct Shards {
    me: u32,
    /// Live shard indexes, sorted; empty until membership is first known
    /// (an emulator that has not yet seen its peers acts for no node).
    members: RwLock<Arc<Vec<u32>>>,
    generation: watch::Sender<u64>,
}

impl fmt::Debug for Shards {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shards")
            .field("me", &self.me)
            .field("members", &*self.members.read())
            .finish()
    }
}

impl Shards {
    /// Shard `me`, whose live peers are not known yet.
    pub fn new(me: u32) -> Arc<Shards> {
        Arc::new(Shards {
            me,
            members: RwLock::new(Arc::new(Vec::new())),
            generation: watch::channel(0).0,
        })
    }

    /// Shard `me` of `count`, all of them taken as live for good.
    pub fn fixed(me: u32, count: u32) -> Arc<Shards> {
        let s = Shards::new(me);
        s.set_members((0..count).collect());
        s
    }

    pub fn me(&self) -> u32 {
        self.me
    }

    pub fn members(&self) -> Arc<Vec<u32>> {
        self.members.read().clone()
    }

    /// Whether this shard owns the node `name`: the live shard with the
    /// highest score for the name (the lowest index on a tie).
    pub fn owns(&self, name: &str) -> bool {
        owner(name, &self.members.read()) == Some(self.me)
    }

    /// Replaces the live set; true when it changed (components then look
    /// again at the nodes they may have gained or lost).
    pub fn set_members(&self, mut members: Vec<u32>) -> bool {
        members.sort_unstable();
        members.dedup();
        {
            let mut cur = self.members.write();
            if **cur == members {
                return false;
            }
            *cur = Arc::new(members);
        }
        self.generation.send_modify(|g| *g += 1);
        true
    }

    /// Wakes whenever the live set changes.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }
}

/// The owner of `name` among `members` by rendezvous hashing.
pub fn owner(name: &str, members: &[u32]) -> Option<u32> {
    let h = crate::nodes::fnv1a(name);
    members
        .iter()
        .copied()
        .max_by_key(|&i| (mix(h ^ mix(i as u64 + 1)), std::cmp::Reverse(i)))
}

/// SplitMix64's finalizer: spreads FNV-1a's bits so that the scores of
/// one name under different shards are independent.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        (0..3000).map(|i| format!("node-{i}")).collect()
    }

    #[test]
    fn each_name_has_one_owner_and_shares_are_even() {
        let shards: Vec<_> = (0..3).map(|i| Shards::fixed(i, 3)).collect();
        let mut counts = [0usize; 3];
        for n in names() {
            let owners: Vec<_> = shards.iter().filter(|s| s.owns(&n)).collect();
            assert_eq!(owners.len(), 1, "{n}");
            counts[owners[0].me() as usize] += 1;
        }
        for c in counts {
            assert!((850..1150).contains(&c), "uneven shares: {counts:?}");
        }
    }

    #[test]
    fn only_a_dead_shards_names_move_and_they_move_back() {
        let all = [0, 1, 2];
        let survivors = [0, 2];
        for n in names() {
            let before = owner(&n, &all).unwrap();
            let after = owner(&n, &survivors).unwrap();
            if before != 1 {
                assert_eq!(before, after, "{n} moved although its shard lives");
            } else {
                assert_ne!(after, 1);
            }
            assert_eq!(owner(&n, &all), Some(before), "not stable");
        }
    }

    #[test]
    fn no_members_no_owner_and_changes_are_announced() {
        let s = Shards::new(0);
        assert!(!s.owns("node-0"));
        let rx = s.changes();
        assert!(s.set_members(vec![1, 0, 0]));
        assert!(!s.set_members(vec![0, 1]));
        assert_eq!(*rx.borrow(), 1);
        assert_eq!(*s.members(), vec![0, 1]);
    }
}
