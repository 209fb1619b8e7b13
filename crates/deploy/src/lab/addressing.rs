//! Subnets for lab networks: each gets its own /27 of 10.213.0.0/16 (2048
//! blocks), and a loopback front address 127.213.x.y for `LabKind::Nat`.
//!
//! Layout of one block (base B):
//! - B+1 host side, B+2 server (a /30 for `LabKind::Veth`, a /28 on the bridge
//!   for the others);
//! - B+17 a second host address on the bridge, B+18 the client (`LabKind::Client`,
//!   a /28 of its own, so client and server are on different subnets and
//!   every packet between them is routed through the host, as from a LAN
//!   client to a published port).
//!
//! A block is free when no address or route of the host overlaps it. The
//! check only looks at prefixes of /16 or longer: a /8 route (a VPN's
//! 10.0.0.0/8) would otherwise rule out the whole pool, and our /28 routes
//! are more specific than it anyway.

use std::net::Ipv4Addr;

use super::command;
use super::LabError;

/// The pool: 10.213.0.0/16, private space (RFC 1918), unlikely to be in use.
const POOL: u32 = u32::from_be_bytes([10, 213, 0, 0]);
const POOL_TEXT: &str = "10.213.0.0/16";
const BLOCK_BITS: u32 = 5; // a /27: 32 addresses
const BLOCKS: u32 = 1 << (16 - BLOCK_BITS);

/// One /27 of the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    index: u32,
}

impl Block {
    fn base(self) -> u32 {
        POOL + (self.index << BLOCK_BITS)
    }

    /// The address `offset` into the block.
    pub(crate) fn host(self, offset: u32) -> Ipv4Addr {
        debug_assert!(offset < 1 << BLOCK_BITS);
        Ipv4Addr::from(self.base() + offset)
    }

    /// A loopback address only this block uses: the DNAT front of
    /// `LabKind::Nat`, reached like Docker's 127.0.0.1:PORT but without taking
    /// any port on 127.0.0.1. 127.0.0.0/8 is all loopback (RFC 1122 3.2.1.3).
    pub(crate) fn loopback_front(self) -> Ipv4Addr {
        Ipv4Addr::new(
            127,
            213,
            (self.index / 250) as u8,
            (self.index % 250 + 1) as u8,
        )
    }

    fn overlaps(self, net: u32, prefix: u8) -> bool {
        let (a_lo, a_hi) = (self.base(), self.base() + (1 << BLOCK_BITS) - 1);
        let mask = if prefix == 0 {
            0
        } else {
            u32::MAX << (32 - prefix)
        };
        let (b_lo, b_hi) = (net & mask, (net & mask) | !mask);
        a_lo <= b_hi && b_lo <= a_hi
    }
}

/// Picks a free block, starting from `seed` so parallel processes and
/// threads start far apart. The caller holds the allocation lock until the
/// block's host-side addresses are assigned.
pub(crate) fn allocate(seed: u32, taken: &[(Ipv4Addr, u8)]) -> Result<Block, LabError> {
    (0..BLOCKS)
        .map(|i| Block {
            index: (seed.wrapping_add(i)) % BLOCKS,
        })
        .find(|b| {
            !taken.iter().any(|&(net, prefix)| {
                let net = u32::from(net);
                b.overlaps(net, 32) || (prefix >= 16 && b.overlaps(net, prefix))
            })
        })
        .ok_or(LabError::NoFreeSubnet {
            pool: POOL_TEXT.to_string(),
        })
}

/// Every IPv4 address (with its prefix) and route destination on the host.
pub(crate) fn in_use() -> Result<Vec<(Ipv4Addr, u8)>, LabError> {
    let addrs = command::run("ip", &["-4", "-o", "addr", "show"])?;
    let routes = command::run("ip", &["-4", "route", "show", "table", "all"])?;
    let mut taken: Vec<(Ipv4Addr, u8)> = addrs
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            words.find(|w| *w == "inet")?;
            parse_prefix(words.next()?)
        })
        .collect();
    taken.extend(routes.lines().filter_map(|line| {
        let mut words = line.split_whitespace().peekable();
        // `local 10.0.0.1 dev …`, `broadcast …`: skip the route type.
        if matches!(
            words.peek(),
            Some(
                &("local"
                    | "broadcast"
                    | "unicast"
                    | "multicast"
                    | "anycast"
                    | "blackhole"
                    | "unreachable"
                    | "prohibit"
                    | "throw")
            )
        ) {
            words.next();
        }
        parse_prefix(words.next()?)
    }));
    Ok(taken)
}

/// `10.1.2.0/24` or a bare address (a /32). `default` is not a prefix.
fn parse_prefix(text: &str) -> Option<(Ipv4Addr, u8)> {
    let (addr, prefix) = match text.split_once('/') {
        Some((a, p)) => (a, p.parse().ok()?),
        None => (text, 32),
    };
    (prefix <= 32).then_some(())?;
    Some((addr.parse().ok()?, prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_lay_out_as_documented() {
        let b = Block { index: 3 };
        assert_eq!(b.host(1), Ipv4Addr::new(10, 213, 0, 97));
        assert_eq!(b.host(18), Ipv4Addr::new(10, 213, 0, 114));
        let last = Block { index: BLOCKS - 1 };
        assert_eq!(last.host(31), Ipv4Addr::new(10, 213, 255, 255));
        assert_eq!(last.loopback_front(), Ipv4Addr::new(127, 213, 8, 48));
        assert_eq!(
            Block { index: 0 }.loopback_front(),
            Ipv4Addr::new(127, 213, 0, 1)
        );
    }

    #[test]
    fn allocation_skips_taken_blocks_and_ignores_wide_prefixes() {
        let taken = [
            (Ipv4Addr::new(10, 213, 0, 1), 28),  // block 0
            (Ipv4Addr::new(10, 213, 0, 32), 32), // block 1 (a route)
            (Ipv4Addr::new(10, 0, 0, 0), 8),     // a VPN's /8: ignored
            (Ipv4Addr::new(10, 213, 0, 70), 8),  // an address in block 2, on a /8
            (Ipv4Addr::new(192, 0, 2, 2), 24),
        ];
        assert_eq!(allocate(0, &taken).unwrap(), Block { index: 3 });
        assert_eq!(allocate(5, &taken).unwrap(), Block { index: 5 });
        // Wraps around the pool.
        assert_eq!(allocate(BLOCKS, &taken).unwrap(), Block { index: 3 });
    }

    #[test]
    fn a_full_pool_is_an_error() {
        let taken = [(Ipv4Addr::new(10, 213, 9, 9), 16)];
        assert!(matches!(
            allocate(7, &taken),
            Err(LabError::NoFreeSubnet { .. })
        ));
    }

    #[test]
    fn prefixes_parse() {
        assert_eq!(
            parse_prefix("10.213.0.0/28"),
            Some((Ipv4Addr::new(10, 213, 0, 0), 28))
        );
        assert_eq!(
            parse_prefix("127.0.0.1"),
            Some((Ipv4Addr::new(127, 0, 0, 1), 32))
        );
        assert_eq!(parse_prefix("default"), None);
        assert_eq!(parse_prefix("1.2.3.4/33"), None);
    }
}
