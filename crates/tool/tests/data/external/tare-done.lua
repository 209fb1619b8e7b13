done = function(summary, latency, requests)
  io.write(string.format("tare-done requests=%d duration_us=%d bytes=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
    summary.requests, summary.duration, summary.bytes, summary.errors.connect, summary.errors.read,
    summary.errors.write, summary.errors.status, summary.errors.timeout))
  for _, p in pairs({50, 75, 90, 99, 99.9, 99.99}) do
    io.write(string.format("tare-done p%g=%d\n", p, latency:percentile(p)))
  end
  io.write(string.format("tare-done min=%d max=%d mean=%f stdev=%f\n", latency.min, latency.max, latency.mean, latency.stdev))
end
