# The ten profile-cost runs of cost-rates.txt and knobs-4999hz.txt (as
# built), fitted together: log(ratio) against the rate, weighted by each
# run's interval; prints one sample's cost with and without an intercept.
import math
pts = [(4999, 1.1371, 1.1034, 1.1719), (4999, 1.0974, 1.0422, 1.1555),
       (4999, 1.0719, 1.0385, 1.1064), (4999, 1.1674, 1.0925, 1.2476),
       (1999, 1.0368, 1.0103, 1.0639), (499, 1.0150, 1.0014, 1.0288),
       (499, 1.0088, 0.9837, 1.0346), (499, 1.0039, 0.9814, 1.0268),
       (199, 1.0114, 0.9949, 1.0281), (199, 1.0053, 0.9801, 1.0311)]
X, Y, W = [], [], []
for r, m, lo, hi in pts:
    se = (math.log(hi) - math.log(lo)) / 2 / 1.97
    X.append(r); Y.append(math.log(m)); W.append(1 / se**2)
b = sum(w*x*y for x, y, w in zip(X, Y, W)) / sum(w*x*x for x, w in zip(X, W))
seb = 1 / math.sqrt(sum(w*x*x for x, w in zip(X, W)))
print(f"through 0: one sample {b*1e6:.1f} us +- {1.96*seb*1e6:.1f}")
for hz in (499, 199):
    print(f"  {hz} Hz: {b*hz*100:.2f}% [{(b-1.96*seb)*hz*100:.2f}, {(b+1.96*seb)*hz*100:.2f}] of a busy CPU")
Sw, Sx, Sy = sum(W), sum(w*x for x, w in zip(X, W)), sum(w*y for y, w in zip(Y, W))
Sxx = sum(w*x*x for x, w in zip(X, W)); Sxy = sum(w*x*y for x, y, w in zip(X, Y, W))
d = Sw*Sxx - Sx*Sx; b2 = (Sw*Sxy - Sx*Sy) / d; a = (Sy - b2*Sx) / Sw
print(f"with an intercept: {a*100:.2f}% +- {1.96*math.sqrt(Sxx/d)*100:.2f}, one sample {b2*1e6:.1f} us +- {1.96*math.sqrt(Sw/d)*1e6:.1f}")
