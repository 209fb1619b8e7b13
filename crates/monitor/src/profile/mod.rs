//! The whole machine's CPU, sampled: what each process's CPU time was spent
//! on, below the process level (docs/profiles.md).
//!
//! While the monitor runs, one `cpu-clock` event per CPU samples every
//! process every `1/hz` s of CPU time with its kernel stack (`perf`): the
//! sampler thread drains the rings every interval and names each sample
//! at once: its kernel stack's subsystem (`subsystems`, through
//! `kallsyms`), its leaf function, or, in user space, its process's name.
//! [`RawProfile`] keeps the named samples with their times;
//! [`RawProfile::build`] counts those of the measured window by component
//! (the CPU table's: server, generator, each watched process, the sampler,
//! the rest of the machine) and subsystem into a [`Profile`].
//!
//! - `records`: the ring's records (fuzzed).
//! - `perf`: the events and their rings.
//! - `kallsyms`: kernel addresses to names.
//! - `subsystems`: function names to subsystems (the map is data).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

mod kallsyms;
mod perf;
pub mod records;
pub mod subsystems;

pub use kallsyms::Kallsyms;

/// The rate every monitored trial samples at by default: 499 Hz per CPU
/// (a prime, so it never beats against the 100/250/1000 Hz timer tick),
/// ~1,000 samples a second on a 2-CPU machine. Each sample is a timer
/// interrupt costing ~22 µs of the CPU it lands on in this project's VM:
/// ~1.1% of a busy CPU, about half the 2% budget; 199 Hz costs ~0.4% and
/// widens a step's intervals ~1.6 times (docs/profiles.md, "What it
/// costs"; bench/profile-cost.sh).
pub const DEFAULT_HZ: u32 = 499;

/// The component of samples no group follows, as the CPU table names it.
pub(crate) const REST: &str = "rest of the machine";

/// Functions kept per record, by CPU time: enough for a step's top movers.
const TOP_FUNCTIONS: usize = 60;

/// One sample, named.
#[derive(Clone, Debug, PartialEq)]
struct Named {
    unix_s: f64,
    pid: u32,
    tid: u32,
    subsystem: &'static str,
    /// Index into `RawProfile::names`: the kernel leaf function, or
    /// `[comm]` for a user-space sample.
    function: u32,
}

/// The samples of one record, named, before the window is known.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawProfile {
    hz: f64,
    samples: Vec<Named>,
    names: Vec<String>,
    lost: u64,
    /// (component, pid, thread): the groups' members over the record.
    members: Vec<(String, u32, Option<u32>)>,
    sampler_tid: u32,
}

/// The profile of a record's window: CPU seconds by component and
/// subsystem, and by function.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Samples per second of CPU time, per CPU.
    pub hz: f64,
    /// Busy samples in the window (idle ones left out).
    pub samples: u64,
    /// Samples the kernel could not write (a ring full between drains).
    pub lost: u64,
    /// Component (`server`, `generator`, `docker-proxy`, `sampler`, `rest
    /// of the machine`...) → subsystem (`TCP/IP`, `netfilter`, `user
    /// space`...) → CPU seconds.
    pub cpu_s: BTreeMap<String, BTreeMap<String, f64>>,
    /// The functions that took the most CPU (the kernel's leaf function,
    /// `[comm]` for a process's user space) → CPU seconds.
    pub functions_cpu_s: BTreeMap<String, f64>,
}

impl Profile {
    /// CPU seconds by subsystem over all components.
    pub fn subsystems(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for by in self.cpu_s.values() {
            for (s, v) in by {
                *out.entry(s.clone()).or_default() += v;
            }
        }
        out
    }
}

/// This machine's kernel symbols, read again when the loaded modules change
/// (a module loaded by a lab's nftables NAT has addresses of its own).
fn kernel_symbols() -> Option<Arc<Kallsyms>> {
    static CACHE: Mutex<Option<(String, Arc<Kallsyms>)>> = Mutex::new(None);
    let modules = std::fs::read_to_string("/proc/modules").unwrap_or_default();
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((m, k)) = cache.as_ref() {
        if *m == modules {
            return Some(k.clone());
        }
    }
    let k = Arc::new(Kallsyms::load()?);
    *cache = Some((modules, k.clone()));
    Some(k)
}

/// A kernel address, named.
#[derive(Clone, Copy)]
struct Frame {
    /// Index into the names; `None`: no symbol holds it.
    function: Option<u32>,
    entry: Option<&'static subsystems::Entry>,
}

/// Names for samples: kernel addresses (each looked up once: a stack's
/// frames repeat from sample to sample, and a lookup is a search of
/// kallsyms and of the subsystem map), and the names' indices.
#[derive(Default)]
struct Namer {
    symbols: Option<Arc<Kallsyms>>,
    /// Every name given, by index (`RawProfile::names` once stopped).
    names: Vec<String>,
    index: HashMap<String, u32>,
    /// Each kernel address seen: its function and that function's entry.
    frames: HashMap<u64, Frame>,
}

impl Namer {
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(i) = self.index.get(name) {
            return *i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }

    fn frame(&mut self, addr: u64) -> Frame {
        if let Some(f) = self.frames.get(&addr) {
            return *f;
        }
        let name = self
            .symbols
            .as_ref()
            .and_then(|k| k.lookup(addr))
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        let f = match name {
            Some(n) => Frame {
                entry: subsystems::entry_of(&n),
                function: Some(self.intern(&n)),
            },
            None => Frame {
                function: None,
                entry: None,
            },
        };
        self.frames.insert(addr, f);
        f
    }

    /// A kernel stack's subsystem and leaf function, leaf first
    /// (as `subsystems::of_stack` says): frames are named only up to the first
    /// that maps to a subsystem, each address once per profile.
    fn name_stack(&mut self, chain: &[u64]) -> (&'static str, u32) {
        if self.symbols.is_none() {
            return (subsystems::OTHER_KERNEL, self.intern("[kernel]"));
        }
        let mut subsystem = subsystems::OTHER_KERNEL;
        let mut leaf = None;
        for (i, a) in chain.iter().enumerate() {
            let f = self.frame(*a);
            if i == 0 {
                leaf = f.function;
            }
            if let Some(e) = f.entry {
                if !(e.leaf_only && i > 0) {
                    subsystem = e.subsystem.as_str();
                }
                break;
            }
        }
        let leaf = match leaf {
            Some(l) => l,
            None => self.intern("[kernel]"),
        };
        (subsystem, leaf)
    }
}

/// The sampling side, owned by the sampler thread.
pub(crate) struct Profiler {
    rings: perf::Rings,
    namer: Namer,
    buf: Vec<u8>,
    parsed: Vec<records::Sample>,
    raw: RawProfile,
    comms: HashMap<u32, u32>,
    known: std::collections::HashSet<(String, u32, Option<u32>)>,
    /// CLOCK_REALTIME − CLOCK_MONOTONIC, seconds: the samples' times are
    /// monotonic, the window is in Unix seconds.
    mono_to_unix_s: f64,
}

fn clock_s(id: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Why a profile cannot be taken, in one line: the error and the setting
/// that decides it.
fn why_not(e: &std::io::Error) -> String {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unreadable".into());
    format!("no profile: perf_event_open: {e} (kernel.perf_event_paranoid = {paranoid}; tare needs root or CAP_PERFMON)")
}

impl Profiler {
    /// Starts sampling every CPU at `hz`; `Err` is the report's one line.
    pub(crate) fn start(hz: u32) -> Result<Profiler, String> {
        let hz = hz.clamp(1, 10_000);
        let rings = perf::Rings::open(1_000_000_000 / hz as u64).map_err(|e| why_not(&e))?;
        // SAFETY: gettid has no preconditions.
        let sampler_tid = unsafe { libc::gettid() } as u32;
        Ok(Profiler {
            rings,
            namer: Namer {
                symbols: kernel_symbols(),
                ..Default::default()
            },
            buf: Vec::with_capacity(1 << 16),
            parsed: Vec::new(),
            raw: RawProfile {
                hz: hz as f64,
                sampler_tid,
                ..Default::default()
            },
            comms: HashMap::new(),
            known: Default::default(),
            mono_to_unix_s: clock_s(libc::CLOCK_REALTIME) - clock_s(libc::CLOCK_MONOTONIC),
        })
    }

    /// Whether kernel functions can be named (`kernel.kptr_restrict` may
    /// hide their addresses).
    pub(crate) fn has_symbols(&self) -> bool {
        self.namer.symbols.is_some()
    }

    fn comm(&mut self, pid: u32) -> u32 {
        if let Some(i) = self.comms.get(&pid) {
            return *i;
        }
        let name = std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|s| format!("[{}]", s.trim()))
            .unwrap_or_else(|_| "[exited process]".into());
        let i = self.namer.intern(&name);
        self.comms.insert(pid, i);
        i
    }

    /// Reads what the rings hold and names each sample.
    pub(crate) fn drain(&mut self) {
        self.buf.clear();
        self.rings.drain(&mut self.buf);
        self.parsed.clear();
        self.raw.lost += records::parse(&self.buf, &mut self.parsed);
        let parsed = std::mem::take(&mut self.parsed);
        for s in &parsed {
            let (subsystem, function) = match s.mode {
                records::Mode::User => (subsystems::USER, self.comm(s.pid)),
                records::Mode::Guest => (subsystems::GUEST, self.comm(s.pid)),
                records::Mode::Kernel | records::Mode::Unknown => {
                    let chain: &[u64] = if s.chain.is_empty() {
                        std::slice::from_ref(&s.ip)
                    } else {
                        &s.chain
                    };
                    self.namer.name_stack(chain)
                }
            };
            self.raw.samples.push(Named {
                unix_s: s.time_ns as f64 * 1e-9 + self.mono_to_unix_s,
                pid: s.pid,
                tid: s.tid,
                subsystem,
                function,
            });
        }
        self.parsed = parsed;
    }

    /// Remembers the groups' members now: a group forgets a member that
    /// exits (the generator's threads end before the monitor stops), but
    /// its samples are still the group's.
    pub(crate) fn note_members(&mut self, members: Vec<(String, u32, Option<u32>)>) {
        for m in members {
            if self.known.insert(m.clone()) {
                self.raw.members.push(m);
            }
        }
    }

    /// The last drain; `members` are the groups' processes and threads now.
    pub(crate) fn stop(mut self, members: Vec<(String, u32, Option<u32>)>) -> RawProfile {
        self.drain();
        self.note_members(members);
        self.raw.names = std::mem::take(&mut self.namer.names);
        self.raw
    }
}

impl RawProfile {
    /// The profile of the samples within `window` (Unix start, seconds),
    /// or of all of them.
    pub(crate) fn build(&self, window: Option<(f64, f64)>) -> Profile {
        let mut by_tid: HashMap<u32, &str> = HashMap::new();
        let mut by_pid: HashMap<u32, &str> = HashMap::new();
        for (name, pid, tid) in &self.members {
            match tid {
                Some(t) => by_tid.entry(*t).or_insert(name),
                None => by_pid.entry(*pid).or_insert(name),
            };
        }
        let period = 1.0 / self.hz.max(1.0);
        let mut p = Profile {
            hz: self.hz,
            lost: self.lost,
            ..Default::default()
        };
        let mut functions: HashMap<u32, f64> = HashMap::new();
        for s in &self.samples {
            if let Some((start, dur)) = window {
                if s.unix_s < start || s.unix_s > start + dur {
                    continue;
                }
            }
            if s.subsystem == subsystems::IDLE {
                continue;
            }
            let component = if s.tid == self.sampler_tid && s.pid != 0 {
                "sampler"
            } else if let Some(c) = by_tid.get(&s.tid).filter(|_| s.pid != 0) {
                c
            } else if let Some(c) = by_pid.get(&s.pid).filter(|_| s.pid != 0) {
                c
            } else {
                REST
            };
            *p.cpu_s
                .entry(component.to_string())
                .or_default()
                .entry(s.subsystem.to_string())
                .or_default() += period;
            *functions.entry(s.function).or_default() += period;
            p.samples += 1;
        }
        let mut top: Vec<(u32, f64)> = functions.into_iter().collect();
        top.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        p.functions_cpu_s = top
            .into_iter()
            .take(TOP_FUNCTIONS)
            .filter_map(|(i, v)| Some((self.names.get(i as usize)?.clone(), v)))
            .collect();
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(unix_s: f64, pid: u32, tid: u32, subsystem: &'static str, function: u32) -> Named {
        Named {
            unix_s,
            pid,
            tid,
            subsystem,
            function,
        }
    }

    #[test]
    fn samples_are_counted_by_component_and_subsystem_within_the_window() {
        let raw = RawProfile {
            hz: 100.0,
            names: vec![
                "tcp_sendmsg".into(),
                "[nginx]".into(),
                "nf_nat_inet_fn".into(),
            ],
            samples: vec![
                named(10.5, 7, 7, "TCP/IP", 0),
                named(10.6, 7, 8, subsystems::USER, 1),
                named(10.7, 9, 9, "TCP/IP", 0),
                named(10.8, 9, 11, "NAT", 2),
                named(10.9, 0, 0, "NAT", 2),
                named(10.9, 0, 0, subsystems::IDLE, 0),
                named(10.9, 5, 5, "TCP/IP", 0),
                named(30.0, 7, 7, "TCP/IP", 0),
            ],
            members: vec![
                ("server".into(), 7, None),
                ("generator".into(), 9, Some(11)),
            ],
            sampler_tid: 5,
            lost: 0,
        };
        let p = raw.build(Some((10.0, 5.0)));
        assert_eq!(p.samples, 6, "{p:?}");
        let s = |c: &str, sub: &str| {
            p.cpu_s
                .get(c)
                .and_then(|m| m.get(sub))
                .copied()
                .unwrap_or(0.0)
        };
        assert!((s("server", "TCP/IP") - 0.01).abs() < 1e-12);
        assert!((s("server", subsystems::USER) - 0.01).abs() < 1e-12);
        assert!((s("generator", "NAT") - 0.01).abs() < 1e-12);
        // pid 9's other threads are not the generator's; the idle task's
        // busy samples (softirq on an idle CPU) are the rest's.
        assert!((s(REST, "TCP/IP") - 0.01).abs() < 1e-12);
        assert!((s(REST, "NAT") - 0.01).abs() < 1e-12);
        assert!((s("sampler", "TCP/IP") - 0.01).abs() < 1e-12);
        assert!((p.functions_cpu_s["tcp_sendmsg"] - 0.03).abs() < 1e-12);
        assert!((p.subsystems()["NAT"] - 0.02).abs() < 1e-12);
        assert_eq!(raw.build(None).samples, 7);
    }

    /// The namer names a stack as `subsystems::of_stack` does over all its
    /// frames, with each address looked up once.
    #[test]
    fn the_namer_agrees_with_the_whole_stack_and_looks_each_address_up_once() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T memcpy\n\
             ffffffff81000100 t nf_nat_inet_fn\n\
             ffffffff81000200 t tcp_sendmsg\n\
             ffffffff81000300 t do_syscall_64\n\
             ffffffff81000400 t some_unmapped_fn\n",
        );
        let name = |a: u64| k.lookup(a).unwrap_or("");
        let mut n = Namer {
            symbols: Some(Arc::new(k.clone())),
            ..Default::default()
        };
        let stacks: [&[u64]; 5] = [
            &[0xffffffff81000010, 0xffffffff81000110, 0xffffffff81000210],
            &[0xffffffff81000010, 0xffffffff81000210, 0xffffffff81000310],
            &[0xffffffff81000410, 0xffffffff81000310],
            &[0xffffffff81000310],
            &[0x1000, 0xffffffff81000210],
        ];
        let mut seen = Vec::new();
        for _ in 0..2 {
            for chain in stacks {
                let (sub, leaf) = n.name_stack(chain);
                assert_eq!(
                    sub,
                    subsystems::of_stack(chain.iter().map(|a| name(*a))),
                    "{chain:x?}"
                );
                let want = Some(name(chain[0])).filter(|s| !s.is_empty());
                assert_eq!(n.names[leaf as usize], want.unwrap_or("[kernel]"));
            }
            seen.push(n.frames.len());
        }
        assert_eq!(seen[0], seen[1], "the second pass looks nothing up");
        // Without symbols every kernel sample is "other kernel".
        let mut hidden = Namer::default();
        let (sub, leaf) = hidden.name_stack(stacks[0]);
        assert_eq!(
            (sub, hidden.names[leaf as usize].as_str()),
            (subsystems::OTHER_KERNEL, "[kernel]")
        );
    }
}
