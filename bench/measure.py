#!/usr/bin/env python3
"""Runs a load generator as a child and prints its throughput and CPU use.

Usage: measure.py wrk|tare -- COMMAND...
Prints one line: `rps=<req/s> cpu_s=<user+sys of the child> requests=<n>`.
The CPU comes from the kernel's rusage of the child (the same for both tools),
so a generator's own claims about its CPU are not trusted here.
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
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if kind == "wrk":
        rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
        requests = int(re.search(r"(\d+) requests in", out).group(1))
    else:
        r = json.loads(out)
        rps, requests = r["rps"], r["requests"]
    user = after.ru_utime - before.ru_utime
    csw = after.ru_nvcsw - before.ru_nvcsw
    print(f"rps={rps:.1f} cpu_s={cpu:.4f} requests={requests} user_s={user:.4f} csw={csw}")


if __name__ == "__main__":
    main()
