//! `-l/--log`: pgbench 15's transaction log, one file per worker thread
//! (`PREFIX.PID` for the first, `PREFIX.PID.N` for thread N), written by
//! that thread only through a buffer (docs/pg.md, "Transaction logs").
//!
//! One line per transaction: `client_id transaction_no time script_no
//! time_epoch time_us [schedule_lag] [retries]`, `time` being the latency
//! in µs or `skipped`/`failed` (`serialization`/`deadlock` with
//! `--failures-detailed`); a lag with `-R`, the retries with `--max-tries`
//! other than 1. With `--sampling-rate` a fraction of them. With
//! `--aggregate-interval`, one line per interval instead: `interval_start
//! num_transactions sum_latency sum_latency_2 min_latency max_latency
//! sum_lag sum_lag_2 min_lag max_lag skipped retried retries
//! serialization_failures deadlock_failures`, every interval written,
//! empty ones too, the last (partial) one at the end.

use std::fs::File;
use std::io::{self, BufWriter, Write};

use super::client::Client;
use crate::config::PgConfig;
use crate::script::random::Rng;

pub(crate) struct TxLog {
    out: BufWriter<File>,
    /// Run clock (ns) to Unix time (µs): add this to `ns / 1000`.
    epoch_offset_us: i64,
    sampling: Option<(f64, Rng)>,
    /// The aggregate in progress, with its interval's length (µs).
    agg: Option<(Agg, i64)>,
    lag: bool,
    retries: bool,
    detailed: bool,
    /// The first write error, reported once at the end.
    pub error: Option<io::Error>,
}

#[derive(Default)]
struct Agg {
    /// Unix µs.
    start: i64,
    cnt: u64,
    lat: Sums,
    lag: Sums,
    skipped: u64,
    retried: u64,
    retries: u64,
    serialization: u64,
    deadlock: u64,
}

#[derive(Default)]
struct Sums {
    sum: f64,
    sum2: f64,
    min: f64,
    max: f64,
    n: u64,
}

impl Sums {
    fn add(&mut self, v: f64) {
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        if self.n == 0 || v > self.max {
            self.max = v;
        }
        self.n += 1;
        self.sum += v;
        self.sum2 += v * v;
    }
}

impl TxLog {
    /// Opens thread `thread`'s file; the error is pgbench's words.
    pub(crate) fn open(cfg: &PgConfig, thread: usize, sample_seed: u64) -> Result<Self, String> {
        let l = cfg.log.as_ref().expect("logging is on");
        let pid = std::process::id();
        let path = match thread {
            0 => format!("{}.{pid}", l.prefix),
            n => format!("{}.{pid}.{n}", l.prefix),
        };
        let f =
            File::create(&path).map_err(|e| format!("could not open logfile \"{path}\": {e}"))?;
        Ok(TxLog {
            out: BufWriter::with_capacity(64 * 1024, f),
            epoch_offset_us: 0,
            sampling: l.sampling_rate.map(|r| (r, Rng::new(sample_seed))),
            agg: l
                .aggregate_interval
                .map(|s| (Agg::default(), s as i64 * 1_000_000)),
            lag: cfg.load.rate.is_some(),
            retries: cfg.max_tries != 1,
            detailed: cfg.failures_detailed,
            error: None,
        })
    }

    /// The run starts at clock reading `start_ns`, which is Unix time
    /// `start_unix_us`: the first interval begins there.
    pub(crate) fn start(&mut self, start_ns: u64, start_unix_us: i64) {
        self.epoch_offset_us = start_unix_us - (start_ns / 1000) as i64;
        if let Some((agg, _)) = self.agg.as_mut() {
            agg.start = start_unix_us;
        }
    }

    fn unix_us(&self, ns: u64) -> i64 {
        (ns / 1000) as i64 + self.epoch_offset_us
    }

    /// A successful transaction, ended at `now` after `lat` ns.
    pub(crate) fn done(&mut self, c: &Client, now: u64, lat: u64) {
        let lag = c.actual_start.saturating_sub(c.tx_start) as f64 / 1e3;
        let lat_us = lat as f64 / 1e3;
        if let Some(agg) = self.interval(now) {
            agg.cnt += 1;
            agg.lat.add(lat_us);
            agg.lag.add(lag);
            if c.tries > 1 {
                agg.retried += 1;
                agg.retries += (c.tries - 1) as u64;
            }
            return;
        }
        self.line(c.id, c.done_txs + 1, &format!("{lat_us:.0}"), c, now, lag);
    }

    /// A transaction that failed for good with SQLSTATE `code`.
    pub(crate) fn failed(&mut self, c: &Client, code: [u8; 5], now: u64) {
        let lag = c.actual_start.saturating_sub(c.tx_start) as f64 / 1e3;
        if let Some(agg) = self.interval(now) {
            match &code {
                b"40001" => agg.serialization += 1,
                b"40P01" => agg.deadlock += 1,
                _ => {}
            }
            if c.tries > 1 {
                agg.retried += 1;
                agg.retries += (c.tries - 1) as u64;
            }
            return;
        }
        let what = match (&code, self.detailed) {
            (b"40001", true) => "serialization",
            (b"40P01", true) => "deadlock",
            _ => "failed",
        };
        self.line(c.id, c.done_txs + 1, what, c, now, lag);
    }

    /// A start skipped under `--latency-limit` (scheduled at `start`).
    pub(crate) fn skipped(&mut self, id: usize, done: u64, script: usize, start: u64, now: u64) {
        let lag = now.saturating_sub(start) as f64 / 1e3;
        if let Some(agg) = self.interval(now) {
            agg.skipped += 1;
            return;
        }
        if !self.sampled() {
            return;
        }
        let t = self.unix_us(now);
        let lag = if self.lag {
            format!(" {lag:.0}")
        } else {
            String::new()
        };
        let retries = if self.retries { " 0" } else { "" };
        let r = writeln!(
            self.out,
            "{id} {} skipped {script} {} {}{lag}{retries}",
            done + 1,
            t.div_euclid(1_000_000),
            t.rem_euclid(1_000_000),
        );
        self.note(r);
    }

    fn sampled(&mut self) -> bool {
        match self.sampling.as_mut() {
            Some((rate, rng)) => rng.next_f64() <= *rate,
            None => true,
        }
    }

    fn line(&mut self, id: usize, n: u64, what: &str, c: &Client, now: u64, lag: f64) {
        if !self.sampled() {
            return;
        }
        let t = self.unix_us(now);
        let mut r = write!(
            self.out,
            "{id} {n} {what} {} {} {}",
            c.script,
            t.div_euclid(1_000_000),
            t.rem_euclid(1_000_000)
        );
        if r.is_ok() && self.lag {
            r = write!(self.out, " {lag:.0}");
        }
        if r.is_ok() && self.retries {
            r = write!(self.out, " {}", c.tries - 1);
        }
        if r.is_ok() {
            r = writeln!(self.out);
        }
        self.note(r);
    }

    /// The aggregate that an event at `now` belongs to, writing out the
    /// intervals that ended before it; `None` when not aggregating.
    fn interval(&mut self, now: u64) -> Option<&mut Agg> {
        let t = self.unix_us(now);
        let (agg, len) = self.agg.as_mut()?;
        let len = *len;
        while t >= agg.start + len {
            let next = agg.start + len;
            let r = write_agg(&mut self.out, agg);
            if let (Err(e), None) = (r, &self.error) {
                self.error = Some(e);
            }
            *agg = Agg {
                start: next,
                ..Agg::default()
            };
        }
        Some(agg)
    }

    /// The run ended: the last interval, and everything to the file.
    pub(crate) fn finish(&mut self) {
        if let Some((agg, _)) = self.agg.as_mut() {
            let r = write_agg(&mut self.out, agg);
            if let (Err(e), None) = (r, &self.error) {
                self.error = Some(e);
            }
        }
        let r = self.out.flush();
        self.note(r);
    }

    fn note(&mut self, r: io::Result<()>) {
        if let (Err(e), None) = (r, &self.error) {
            self.error = Some(e);
        }
    }
}

fn write_agg(out: &mut impl Write, a: &Agg) -> io::Result<()> {
    writeln!(
        out,
        "{} {} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {} {} {} {} {}",
        a.start.div_euclid(1_000_000),
        a.cnt,
        a.lat.sum,
        a.lat.sum2,
        a.lat.min,
        a.lat.max,
        a.lag.sum,
        a.lag.sum2,
        a.lag.min,
        a.lag.max,
        a.skipped,
        a.retried,
        a.retries,
        a.serialization,
        a.deadlock
    )
}
