//! IPv4 arithmetic for handing out node addresses and pod CIDRs.

use std::net::Ipv4Addr;

/// An IPv4 network: address and prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Net {
    pub addr: u32,
    pub prefix: u8,
}

impl Net {
    pub fn parse(s: &str) -> Result<Net, String> {
        let (a, p) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not a CIDR (a.b.c.d/n)"))?;
        let addr: Ipv4Addr = a.parse().map_err(|_| format!("bad address in {s:?}"))?;
        let prefix: u8 = p.parse().map_err(|_| format!("bad prefix in {s:?}"))?;
        if prefix > 32 {
            return Err(format!("bad prefix in {s:?}"));
        }
        let mask = if prefix == 0 {
            0
        } else {
            u32::MAX << (32 - prefix)
        };
        Ok(Net {
            addr: u32::from(addr) & mask,
            prefix,
        })
    }

    /// The `i`-th subnet of length `len` inside this network, if it fits.
    pub fn subnet(&self, len: u8, i: u64) -> Option<Net> {
        if len < self.prefix || len > 32 {
            return None;
        }
        let count = 1u64 << (len - self.prefix);
        if i >= count {
            return None;
        }
        let step = 1u64 << (32 - len);
        Some(Net {
            addr: (self.addr as u64 + i * step) as u32,
            prefix: len,
        })
    }

    /// The `i`-th address of the network, if it lies inside.
    pub fn host(&self, i: u64) -> Option<Ipv4Addr> {
        let size = 1u64 << (32 - self.prefix);
        (i < size).then(|| Ipv4Addr::from((self.addr as u64 + i) as u32))
    }
}

impl std::fmt::Display for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.addr), self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnets_and_hosts() {
        let n = Net::parse("10.128.0.0/9").unwrap();
        assert_eq!(n.subnet(24, 0).unwrap().to_string(), "10.128.0.0/24");
        assert_eq!(n.subnet(24, 257).unwrap().to_string(), "10.129.1.0/24");
        assert_eq!(n.subnet(24, 1 << 15), None);
        let h = Net::parse("172.16.0.0/12").unwrap();
        assert_eq!(h.host(1).unwrap().to_string(), "172.16.0.1");
        assert_eq!(h.host(300).unwrap().to_string(), "172.16.1.44");
        assert!(Net::parse("10.0.0.0").is_err());
        assert!(Net::parse("10.0.0.0/33").is_err());
        // Host bits are dropped, as a CIDR's network address.
        assert_eq!(
            Net::parse("10.1.2.3/16").unwrap().to_string(),
            "10.1.0.0/16"
        );
    }
}
