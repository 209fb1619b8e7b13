//! Kernel addresses to function names, from `/proc/kallsyms` (proc(5)):
//! `ADDRESS TYPE NAME [MODULE]`, text symbols only (types `t`, `T`, `w`,
//! `W`). With `kernel.kptr_restrict` hiding them every address reads 0, and
//! no name can be given.

/// Text symbols sorted by address.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Kallsyms {
    addrs: Vec<u64>,
    names: Vec<String>,
}

impl Kallsyms {
    /// Parses kallsyms text; lines that are not a text symbol are skipped.
    pub fn parse(text: &str) -> Kallsyms {
        let mut v: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split_ascii_whitespace();
                let addr = u64::from_str_radix(f.next()?, 16).ok()?;
                let kind = f.next()?;
                let name = f.next()?;
                (addr != 0 && matches!(kind, "t" | "T" | "w" | "W"))
                    .then(|| (addr, name.to_string()))
            })
            .collect();
        v.sort_by_key(|(a, _)| *a);
        v.dedup_by_key(|(a, _)| *a);
        let (addrs, names) = v.into_iter().unzip();
        Kallsyms { addrs, names }
    }

    /// This machine's, `None` when unreadable or hidden (every address 0).
    pub fn load() -> Option<Kallsyms> {
        let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
        let k = Kallsyms::parse(&text);
        (!k.addrs.is_empty()).then_some(k)
    }

    /// The function holding `addr`: the last symbol at or below it.
    pub fn lookup(&self, addr: u64) -> Option<&str> {
        let i = self.addrs.partition_point(|a| *a <= addr);
        (i > 0).then(|| self.names[i - 1].as_str())
    }

    pub fn len(&self) -> usize {
        self.addrs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_function_holding_an_address() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\n\
             ffffffff81000100 t tcp_sendmsg\n\
             ffffffff81000050 D some_data\n\
             ffffffffc0001000 t nf_nat_ipv4_fn\t[nf_nat]\n\
             garbage line\n\
             0000000000000000 T hidden\n",
        );
        assert_eq!(k.len(), 3);
        assert_eq!(k.lookup(0xffffffff81000120), Some("tcp_sendmsg"));
        assert_eq!(k.lookup(0xffffffff81000000), Some("_stext"));
        assert_eq!(k.lookup(0xffffffffc0001004), Some("nf_nat_ipv4_fn"));
        assert_eq!(k.lookup(0x1000), None);
    }

    #[test]
    fn hidden_addresses_give_no_table() {
        let k = Kallsyms::parse("0000000000000000 T _stext\n0000000000000000 t tcp_sendmsg\n");
        assert!(k.is_empty());
    }
}
