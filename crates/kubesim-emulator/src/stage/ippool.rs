//! Pod IPs from each node's podCIDRs, as a CNI's host-local IPAM hands them
//! out: the lowest free address (skipping the network and gateway
//! addresses), kept per pod until the pod is gone, so the same pod always
//! shows the same IP and a run is reproducible.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use parking_lot::Mutex;

use crate::nodes::cidr::Net;

/// Addresses below this offset are the network's and its gateway's.
const FIRST_HOST: u64 = 2;

#[derive(Default)]
struct Pool {
    /// Offset in the network → owner.
    used: BTreeMap<u64, String>,
    by_owner: BTreeMap<String, u64>,
    /// Where the search for a free address starts.
    next: u64,
}

/// Every CIDR's pool, keyed by the CIDR's text.
#[derive(Default)]
pub struct IpPools {
    pools: Mutex<BTreeMap<String, Pool>>,
}

impl IpPools {
    /// The address `owner` holds in `cidr`, allocating one if it has none.
    /// None when the CIDR is not IPv4 or is full.
    pub fn assign(&self, cidr: &str, owner: &str) -> Option<Ipv4Addr> {
        let net = Net::parse(cidr).ok()?;
        let size = 1u64 << (32 - net.prefix);
        let mut pools = self.pools.lock();
        let key = net.to_string();
        if let Some(off) = pools.get(&key).and_then(|p| p.by_owner.get(owner)) {
            return net.host(*off);
        }
        // Broadcast is the last address; /31 and /32 have no room.
        let usable = size.saturating_sub(1);
        if usable <= FIRST_HOST {
            return None;
        }
        let span = usable - FIRST_HOST;
        let empty = Pool::default();
        let pool = pools.get(&key).unwrap_or(&empty);
        if pool.used.len() as u64 >= span {
            return None;
        }
        let start = pool.next.max(FIRST_HOST);
        let off = (0..span)
            .map(|i| FIRST_HOST + (start - FIRST_HOST + i) % span)
            .find(|o| !pool.used.contains_key(o))?;
        let pool = pools.entry(key).or_default();
        pool.used.insert(off, owner.to_string());
        pool.by_owner.insert(owner.to_string(), off);
        pool.next = off + 1;
        net.host(off)
    }

    /// Records an address a pod already shows (after a restart), so it is
    /// not handed to another pod.
    pub fn mark(&self, cidr: &str, ip: &str, owner: &str) {
        let (Ok(net), Ok(ip)) = (Net::parse(cidr), ip.parse::<Ipv4Addr>()) else {
            return;
        };
        let off = u32::from(ip).wrapping_sub(net.addr) as u64;
        if off >= 1u64 << (32 - net.prefix) {
            return;
        }
        let mut pools = self.pools.lock();
        let pool = pools.entry(net.to_string()).or_default();
        if pool.used.contains_key(&off) {
            return;
        }
        pool.used.insert(off, owner.to_string());
        pool.by_owner.insert(owner.to_string(), off);
    }

    /// Frees every address `owner` holds.
    pub fn release(&self, owner: &str) {
        for pool in self.pools.lock().values_mut() {
            if let Some(off) = pool.by_owner.remove(owner) {
                pool.used.remove(&off);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_free_stable_per_owner_and_recycled() {
        let p = IpPools::default();
        let cidr = "10.0.1.0/24";
        assert_eq!(p.assign(cidr, "a").unwrap().to_string(), "10.0.1.2");
        assert_eq!(p.assign(cidr, "b").unwrap().to_string(), "10.0.1.3");
        assert_eq!(p.assign(cidr, "a").unwrap().to_string(), "10.0.1.2");
        p.mark(cidr, "10.0.1.4", "c");
        assert_eq!(p.assign(cidr, "d").unwrap().to_string(), "10.0.1.5");
        p.release("b");
        // The search goes on from the last address before wrapping round.
        assert_eq!(p.assign(cidr, "e").unwrap().to_string(), "10.0.1.6");
        assert!(p.assign("bad", "x").is_none());
    }

    #[test]
    fn a_full_pool_gives_none() {
        let p = IpPools::default();
        // A /30 has four addresses: network, gateway, one host, broadcast.
        assert_eq!(
            p.assign("10.0.0.0/30", "a").unwrap().to_string(),
            "10.0.0.2"
        );
        assert!(p.assign("10.0.0.0/30", "b").is_none());
        p.release("a");
        assert_eq!(
            p.assign("10.0.0.0/30", "b").unwrap().to_string(),
            "10.0.0.2"
        );
    }
}
