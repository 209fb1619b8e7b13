#!/usr/bin/env python3
"""Summarises bench/vs-net.sh's per-run lines: medians per tool, and each
ratio tare/reference as the median of the ratios within each round with a
distribution-free 95% interval, beside the same for A/A (tare against a
second run of the same client in the same round), and whether each goal of
bench/README.md is met, missed, or not resolved at this noise.

Usage: net_summary.py RUNS_FILE

Each tool runs once per round, so the i-th runs of two tools share a round:
their ratio leaves out what the round's neighbours did to both (a build
starting, a stall), as a paired test does. The interval of a median of n
ratios is the pair of order statistics [r(k), r(n+1-k)] with the largest k
whose coverage 1 - 2 P(Binomial(n, 1/2) < k) is at least 95% (the sign
test's interval: no assumption on the ratios' distribution, so a stalled
run moves it by one rank, never by its size). With fewer than 6 rounds no
such pair reaches 95%; then [min, max] and its coverage are printed.
"""
import math
import statistics
import sys


def median_interval(values):
    """The median of `values`, its distribution-free interval and coverage."""
    v = sorted(values)
    n = len(v)
    best = (v[0], v[-1], 1 - 2 * 0.5**n)
    for k in range(1, n // 2 + 1):
        below = sum(math.comb(n, i) for i in range(k)) / 2**n
        coverage = 1 - 2 * below
        if coverage < 0.95:
            break
        best = (v[k - 1], v[n - k], coverage)
    return statistics.median(v), best


def load(path):
    runs, notes = {}, []
    for line in open(path):
        if line.startswith("#"):
            notes.append(line.rstrip())
            continue
        tool, *kv = line.split()
        runs.setdefault(tool, []).append(
            {k: float(v) for k, v in (x.split("=") for x in kv)})
    return runs, notes


def main():
    runs, notes = load(sys.argv[1])
    for n in notes:
        print(n)
    med = lambda tool, key: statistics.median(r[key] for r in runs[tool])
    has = lambda tool, key: tool in runs and all(key in r for r in runs[tool])

    def paired(tool, ref, key):
        return [a[key] / b[key] for a, b in zip(runs[tool], runs[ref])]

    def ratio(tool, ref, key):
        m, (lo, hi, cov) = median_interval(paired(tool, ref, key))
        return m, lo, hi, cov

    def show(r):
        m, lo, hi, cov = r
        return f"{m:.3f}x [{lo:.3f}, {hi:.3f}]" + ("" if cov >= 0.95 else f" ({cov:.0%})")

    def verdict(r, low, high):
        """Met when the interval lies inside [low, high], missed when it
        lies wholly outside, else not resolved (always, below 6 rounds)."""
        _, lo, hi, cov = r
        if cov < 0.95:
            return "not resolved (fewer than 6 rounds)"
        if lo >= low and hi <= high:
            return "met"
        if hi < low or lo > high:
            return "MISSED"
        return "not resolved"

    rr = [t for t in ("tare-rr", "tare-rr-again", "tare-rr-epoll", "tare-rr-uring", "tare-rr-before",
                      "sockperf", "qperf") if t in runs]
    if rr:
        rounds = len(runs["tare-rr"])
        print(f"round trips, {rounds} rounds; ratios: median of the within-round ratios "
              f"[95% interval]")
        print(f"{'tool':<15} {'mean round trip us':>18} {'p50 us':>8} {'CPU us/tx':>10}")
        for t in rr:
            p50 = f"{med(t, 'p50_us'):.2f}" if has(t, "p50_us") else "-"
            print(f"{t:<15} {med(t, 'rtt_us'):>18.2f} {p50:>8} {med(t, 'cpu_us_per_tx'):>10.3f}")
        goals = []
        for ref in [t for t in rr if t != "tare-rr"]:
            rtt = ratio("tare-rr", ref, "rtt_us")
            cpu = ratio("tare-rr", ref, "cpu_us_per_tx")
            p50 = (f", p50 {show(ratio('tare-rr', ref, 'p50_us'))}"
                   if has(ref, "p50_us") and has("tare-rr", "p50_us") else "")
            print(f"tare/{ref}: round trip {show(rtt)}{p50}, CPU per transaction {show(cpu)}")
            if ref in ("sockperf", "qperf"):
                # Within 3% or faster; CPU no higher (bench/README.md).
                goals.append(f"  round trip vs {ref} <= 1.03x: {verdict(rtt, 0, 1.03)}; "
                             f"CPU per transaction <= 1.00x: {verdict(cpu, 0, 1.0)}")
        for g in goals:
            print(g)
    st = [t for t in ("tare-stream", "tare-stream-again", "tare-stream-before", "nuttcp",
                      "iperf3") if t in runs]
    if st:
        rounds = len(runs["tare-stream"])
        print(f"streams, {rounds} rounds")
        print(f"{'tool':<18} {'Gbit/s':>8} {'CPU s/GB':>9}")
        for t in st:
            print(f"{t:<18} {med(t, 'gbit'):>8.2f} {med(t, 'cpu_s_per_gb'):>9.4f}")
        goals = []
        for ref in [t for t in st if t != "tare-stream"]:
            gbit = ratio("tare-stream", ref, "gbit")
            cpu = ratio("tare-stream", ref, "cpu_s_per_gb")
            print(f"tare/{ref}: stream {show(gbit)}, CPU per GB {show(cpu)}")
            if ref in ("nuttcp", "iperf3"):
                goals.append(f"  stream vs {ref} >= 0.97x: {verdict(gbit, 0.97, math.inf)}")
        for g in goals:
            print(g)


if __name__ == "__main__":
    main()
