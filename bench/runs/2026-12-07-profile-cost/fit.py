# Every profile-cost run at the built attribute (cost-rates.txt,
# naming-ab.txt both builds: the naming runs on the sampling thread, not in
# the timed thread; knobs-4999hz.txt "as built"), fitted together:
# log(ratio) against the rate, weighted by each run's interval; prints one
# sample's cost, through 0 and with an intercept, and what it makes at 499
# and 199 Hz. Run from this folder.
import math, re

LINE = re.compile(r"\s*(\d+) Hz: CPU per round trip with/without ([\d.]+) \[([\d.]+), ([\d.]+)\]")
pts = []
for f in ("cost-rates.txt", "naming-ab.txt", "knobs-4999hz.txt"):
    built = True
    for l in open(f):
        if l.startswith("=="):
            built = f != "knobs-4999hz.txt" or "as built" in l
        m = LINE.match(l)
        if m and built:
            pts.append(tuple(float(x) for x in m.groups()))
X, Y, W = [], [], []
for r, m, lo, hi in pts:
    se = (math.log(hi) - math.log(lo)) / 2 / 1.97
    X.append(r); Y.append(math.log(m)); W.append(1 / se**2)
print(f"{len(pts)} runs")
b = sum(w*x*y for x, y, w in zip(X, Y, W)) / sum(w*x*x for x, w in zip(X, W))
seb = 1 / math.sqrt(sum(w*x*x for x, w in zip(X, W)))
print(f"through 0: one sample {b*1e6:.1f} us +- {1.96*seb*1e6:.1f}")
for hz in (499, 199):
    print(f"  {hz} Hz: {b*hz*100:.2f}% [{(b-1.96*seb)*hz*100:.2f}, {(b+1.96*seb)*hz*100:.2f}] of a busy CPU")
Sw, Sx, Sy = sum(W), sum(w*x for x, w in zip(X, W)), sum(w*y for y, w in zip(Y, W))
Sxx = sum(w*x*x for x, w in zip(X, W)); Sxy = sum(w*x*y for x, y, w in zip(X, Y, W))
d = Sw*Sxx - Sx*Sx; b2 = (Sw*Sxy - Sx*Sy) / d; a = (Sy - b2*Sx) / Sw
print(f"with an intercept: {a*100:.2f}% +- {1.96*math.sqrt(Sxx/d)*100:.2f}, one sample {b2*1e6:.1f} us +- {1.96*math.sqrt(Sw/d)*1e6:.1f}")
