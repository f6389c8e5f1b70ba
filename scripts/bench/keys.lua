-- Each request with the next of the keys in `keys` (a table of secrets defined before this
-- script, by bench.sh), round robin: every request in a batch of the Redis limiter's is then
-- another subject's.
local i = 0
request = function()
  i = i + 1
  return wrk.format(nil, nil, { ["Authorization"] = "Bearer " .. keys[i % #keys + 1] })
end
