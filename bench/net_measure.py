#!/usr/bin/env python3
"""Runs one network benchmark client as a child; prints what it measured
and the CPU the kernel charged it (rusage, the same for every tool, so no
tool's own claim about its CPU is trusted).

Usage: net_measure.py KIND -- COMMAND...
KIND: tare-rr (or tare-rr-LABEL, another tare run), sockperf, qperf (round
trips) or tare-stream (or tare-stream-LABEL), iperf3, nuttcp.
Round trips print `rtt_us=<mean round trip> tx=<transactions>
cpu_us_per_tx=<>` and, where the tool keeps a histogram (tare, sockperf),
`p50_us=<median round trip>`; streams print `gbit=<Gbit/s>
cpu_s_per_gb=<client CPU per GB moved>`.
The mean round trip is the measured period over the round trips in it for
every tool: tare's `round_trip_us`, qperf's latency (which it derives so),
and sockperf's `[Valid Duration]` run time over its received messages (its
own "Latency is" mean of per-message samples leaves out the client's work
between messages; the two differed by under 0.1% here). sockperf and qperf
report half a round trip (one-way latency); it is doubled here so every
tool speaks in full round trips, as tare does. On a machine shared with
builds the means carry the stalls; the medians do not.
"""
import json
import re
import resource
import subprocess
import sys


def main():
    kind = sys.argv[1]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = p.stdout + p.stderr
    if p.returncode != 0:
        sys.exit(f"{kind}: exit {p.returncode}: {out[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if kind.startswith("tare-rr") or kind in ("sockperf", "qperf"):
        p50 = None
        if kind.startswith("tare-rr"):
            r = json.loads(p.stdout)
            rtt, tx = r["net"]["round_trip_us"], r["requests"]
            p50 = r["latency_us"]["p50"]
        elif kind == "sockperf":
            m = re.search(r"\[Valid Duration\] RunTime=([\d.]+) sec.*ReceivedMessages=(\d+)", out)
            rtt = float(m.group(1)) * 1e6 / max(int(m.group(2)), 1)
            p50 = 2 * float(re.search(r"percentile 50\.000 =\s*([\d.]+)", out).group(1))
            # Every message of the run (its warm-up too) is what the CPU paid for.
            tx = int(re.search(r"\[Total Run\].*ReceivedMessages=(\d+)", out).group(1))
        else:
            rtt = 2 * float(re.search(r"latency\s*=\s*([\d.]+) us", out).group(1))
            tx = int(re.search(r"loc_recv_msgs\s*=\s*([\d,]+)", out).group(1).replace(",", ""))
        median = f" p50_us={p50:.2f}" if p50 is not None else ""
        print(f"rtt_us={rtt:.2f}{median} tx={tx} cpu_us_per_tx={cpu * 1e6 / max(tx, 1):.3f}")
    else:
        if kind.startswith("tare-stream"):
            r = json.loads(p.stdout)
            gbit = r["net"]["send_gbit_s"]
            moved = r["net"]["bytes_sent"]
        elif kind == "iperf3":
            e = json.loads(p.stdout)["end"]
            gbit = e["sum_received"]["bits_per_second"] / 1e9
            moved = e["sum_sent"]["bytes"]
        else:
            m = re.search(r"([\d.]+) MB /\s+([\d.]+) sec =\s+([\d.]+) Mbps", out)
            gbit = float(m.group(3)) / 1e3
            moved = float(m.group(1)) * 1048576
        print(f"gbit={gbit:.3f} cpu_s_per_gb={cpu / (moved / 1e9):.4f}")


if __name__ == "__main__":
    main()
