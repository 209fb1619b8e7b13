"""Summary of bench/vs-redis-benchmark.sh's per-run lines (its RAW file).

Each line: `WHO P round=I rps=... cpu_s=... n=... [user_s= sys_s= vcsw=
ivcsw= server_cpu_s=]`, WHO `redis-benchmark`, `tare` or `tare[VARIANT]`.
Prints, per -P and tool, the medians of requests/s, CPU per request (its
user and system parts), sleeps (voluntary context switches) per 1,000
requests and the server's CPU per request; then each tare's ratios to
redis-benchmark: of the medians, and the median and range of the
within-round ratios (the same round's redis-benchmark run), which drift
in the machine's load does not move.
"""

import statistics
import sys

runs = {}
for line in open(sys.argv[1]):
    words = line.split()
    who, p = words[0], words[1]
    kv = dict(x.split("=", 1) for x in words[2:])
    n = float(kv["n"])
    r = runs.setdefault((who, p), {})
    rnd = int(kv.get("round", len(r) + 1))
    r[rnd] = {
        "rps": float(kv["rps"]),
        "cpu": float(kv["cpu_s"]) / n * 1e6,
        "user": float(kv["user_s"]) / n * 1e6 if "user_s" in kv else None,
        "sys": float(kv["sys_s"]) / n * 1e6 if "sys_s" in kv else None,
        "vcsw": float(kv["vcsw"]) / n * 1e3 if "vcsw" in kv else None,
        "server": float(kv["server_cpu_s"]) / n * 1e6 if "server_cpu_s" in kv else None,
    }

m = statistics.median


def med(r, k):
    xs = [x[k] for x in r.values() if x[k] is not None]
    return m(xs) if xs else float("nan")


for p in ("1", "16"):
    if ("redis-benchmark", p) not in runs:
        continue
    base = runs[("redis-benchmark", p)]
    for (who, q), r in sorted(runs.items(), key=lambda kv: kv[0][0] != "redis-benchmark"):
        if q != p:
            continue
        print(f"-P {p:<2}: {who:<24} median {med(r, 'rps'):9.0f} req/s, {med(r, 'cpu'):7.3f} us CPU/req "
              f"(user {med(r, 'user'):.3f}, sys {med(r, 'sys'):.3f}), "
              f"{med(r, 'vcsw'):.2f} sleeps/1k req, server {med(r, 'server'):.3f} us CPU/req")
    for (who, q), r in sorted(runs.items()):
        if q != p or who == "redis-benchmark":
            continue
        rounds = sorted(set(r) & set(base))
        rr = [r[i]["rps"] / base[i]["rps"] for i in rounds]
        rc = [r[i]["cpu"] / base[i]["cpu"] for i in rounds]
        print(f"-P {p:<2}: {who:<24} vs redis-benchmark: req/s {med(r, 'rps') / med(base, 'rps'):.3f} "
              f"(per round median {m(rr):.3f}, {min(rr):.3f}-{max(rr):.3f}; goal >= 1.0), "
              f"CPU/req {med(r, 'cpu') / med(base, 'cpu'):.3f} "
              f"(per round median {m(rc):.3f}, {min(rc):.3f}-{max(rc):.3f}; goal <= 0.5 at -P 1)")
