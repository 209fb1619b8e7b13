wrk.method = "POST"
wrk.body   = "a=1"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
request = function()
  return wrk.format(nil, "/missing")
end
