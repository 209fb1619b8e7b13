-- tare's summary of a wrk run (docs/external.md, "wrk's exact percentiles
-- and histogram"): append this done() to your script.
done = function(summary, latency, requests)
  io.write(string.format("tare-done requests=%d duration_us=%d bytes=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
    summary.requests, summary.duration, summary.bytes, summary.errors.connect, summary.errors.read,
    summary.errors.write, summary.errors.status, summary.errors.timeout))
  for _, p in pairs({50, 75, 90, 99, 99.9, 99.99}) do
    io.write(string.format("tare-done p%g=%d\n", p, latency:percentile(p)))
  end
  io.write(string.format("tare-done min=%d max=%d mean=%f stdev=%f\n", latency.min, latency.max, latency.mean, latency.stdev))
  -- The whole distribution as wrk keeps it, a count per microsecond:
  -- latency(i) is the i-th distinct value and its count, 64 pairs a line.
  -- Each call walks wrk's table from the minimum, so the walk stops past
  -- a budget of steps (many distinct values spread over seconds) and
  -- says where: `cut=` instead of `count=`.
  local n, lo = #latency, latency.min
  local budget, steps, total, i, line = 5e8, 0, 0, 1, {}
  while i <= n do
    local v, c = latency(i)
    steps = steps + (v - lo) + 1
    if steps > budget then break end
    total = total + c
    line[#line + 1] = string.format("%d:%d", v, c)
    if #line == 64 then
      io.write("tare-done hist ", table.concat(line, " "), "\n")
      line = {}
    end
    i = i + 1
  end
  if #line > 0 then io.write("tare-done hist ", table.concat(line, " "), "\n") end
  if i > n then
    io.write(string.format("tare-done hist-end values=%d count=%d\n", n, total))
  else
    io.write(string.format("tare-done hist-end values=%d cut=%d\n", n, i - 1))
  end
end
