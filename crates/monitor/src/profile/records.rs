//! The records a perf ring buffer holds (perf_event_open(2), "MMAP
//! layout"): an 8-byte header (`type: u32, misc: u16, size: u16`), then
//! the body. tare asks for samples of `PERF_SAMPLE_IP | TID | TIME |
//! CALLCHAIN`, so a `PERF_RECORD_SAMPLE` body is `ip: u64, pid: u32,
//! tid: u32, time: u64, nr: u64, ips: [u64; nr]`; `PERF_RECORD_LOST` is
//! `id: u64, lost: u64`. Other records are skipped by their size.
//!
//! The bytes are the kernel's, but parsed as external input: a record
//! that does not fit ends the parse, never a panic (fuzzed:
//! `crates/monitor/fuzz`).

const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_SAMPLE: u32 = 9;
const MISC_CPUMODE_MASK: u16 = 7;

/// Where the CPU was when sampled (`misc & PERF_RECORD_MISC_CPUMODE_MASK`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Kernel,
    User,
    /// A guest's kernel or user space (a VM), or the hypervisor.
    Guest,
    Unknown,
}

impl Mode {
    fn of(misc: u16) -> Mode {
        match misc & MISC_CPUMODE_MASK {
            1 => Mode::Kernel,
            2 => Mode::User,
            3..=5 => Mode::Guest,
            _ => Mode::Unknown,
        }
    }
}

/// Callchain entries at or above this are context markers
/// (`PERF_CONTEXT_KERNEL` = -128, `PERF_CONTEXT_USER` = -512, ... as u64),
/// not addresses.
const PERF_CONTEXT_MAX: u64 = (-4095i64) as u64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub mode: Mode,
    pub ip: u64,
    pub pid: u32,
    pub tid: u32,
    pub time_ns: u64,
    /// The kernel callchain's addresses, leaf first (context markers left out).
    pub chain: Vec<u64>,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn sample(mode: Mode, body: &[u8]) -> Option<Sample> {
    let ip = u64_at(body, 0)?;
    let pid = u32_at(body, 8)?;
    let tid = u32_at(body, 12)?;
    let time_ns = u64_at(body, 16)?;
    let nr = u64_at(body, 24)?;
    // The chain must fit in the record: nr is bounded by the body's size.
    let nr = usize::try_from(nr).ok()?;
    if nr > (body.len().saturating_sub(32)) / 8 {
        return None;
    }
    let chain = (0..nr)
        .filter_map(|i| u64_at(body, 32 + 8 * i))
        .filter(|a| *a < PERF_CONTEXT_MAX)
        .collect();
    Some(Sample {
        mode,
        ip,
        pid,
        tid,
        time_ns,
        chain,
    })
}

/// Parses whole records from `bytes` into `out`; returns the samples the
/// kernel says it lost. A short or malformed record ends the parse.
pub fn parse(bytes: &[u8], out: &mut Vec<Sample>) -> u64 {
    let mut lost = 0u64;
    let mut at = 0usize;
    while let (Some(kind), Some(misc), Some(size)) = (
        u32_at(bytes, at),
        u16_at(bytes, at + 4),
        u16_at(bytes, at + 6),
    ) {
        let size = size as usize;
        let Some(body) = (size >= 8).then(|| bytes.get(at + 8..at + size)).flatten() else {
            break;
        };
        match kind {
            PERF_RECORD_SAMPLE => {
                if let Some(s) = sample(Mode::of(misc), body) {
                    out.push(s);
                }
            }
            PERF_RECORD_LOST => lost = lost.saturating_add(u64_at(body, 8).unwrap_or(0)),
            _ => {}
        }
        at += size;
    }
    lost
}

#[cfg(test)]
pub(crate) fn encode(s: &Sample, misc: u16) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&s.ip.to_ne_bytes());
    body.extend_from_slice(&s.pid.to_ne_bytes());
    body.extend_from_slice(&s.tid.to_ne_bytes());
    body.extend_from_slice(&s.time_ns.to_ne_bytes());
    body.extend_from_slice(&(s.chain.len() as u64 + 1).to_ne_bytes());
    body.extend_from_slice(&((-128i64) as u64).to_ne_bytes());
    for a in &s.chain {
        body.extend_from_slice(&a.to_ne_bytes());
    }
    let mut out = Vec::new();
    out.extend_from_slice(&PERF_RECORD_SAMPLE.to_ne_bytes());
    out.extend_from_slice(&misc.to_ne_bytes());
    out.extend_from_slice(&((body.len() + 8) as u16).to_ne_bytes());
    out.extend_from_slice(&body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel_sample() -> Sample {
        Sample {
            mode: Mode::Kernel,
            ip: 0xffffffff81000120,
            pid: 42,
            tid: 43,
            time_ns: 1_000_000,
            chain: vec![0xffffffff81000120, 0xffffffff81000200],
        }
    }

    #[test]
    fn samples_and_lost_records_parse() {
        let mut bytes = encode(&kernel_sample(), 1);
        // A lost record: header, id, lost.
        bytes.extend_from_slice(&PERF_RECORD_LOST.to_ne_bytes());
        bytes.extend_from_slice(&0u16.to_ne_bytes());
        bytes.extend_from_slice(&24u16.to_ne_bytes());
        bytes.extend_from_slice(&7u64.to_ne_bytes());
        bytes.extend_from_slice(&5u64.to_ne_bytes());
        let user = Sample {
            mode: Mode::User,
            ip: 0x400000,
            chain: vec![],
            ..kernel_sample()
        };
        bytes.extend_from_slice(&encode(&user, 2));
        let mut out = Vec::new();
        assert_eq!(parse(&bytes, &mut out), 5);
        assert_eq!(out, vec![kernel_sample(), user]);
    }

    #[test]
    fn truncated_and_malformed_records_end_the_parse() {
        let whole = encode(&kernel_sample(), 1);
        for cut in 0..whole.len() {
            let mut out = Vec::new();
            parse(&whole[..cut], &mut out);
            assert!(out.is_empty(), "cut at {cut}");
        }
        // A size of zero would loop forever; a chain longer than the record.
        let mut zero = whole.clone();
        zero[6..8].copy_from_slice(&0u16.to_ne_bytes());
        let mut out = Vec::new();
        parse(&zero, &mut out);
        assert!(out.is_empty());
        let mut long = whole.clone();
        long[8 + 24..8 + 32].copy_from_slice(&u64::MAX.to_ne_bytes());
        parse(&long, &mut out);
        assert!(out.is_empty());
    }
}
