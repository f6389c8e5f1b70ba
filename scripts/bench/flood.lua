-- Every request from a different made-up client address, through a trusted proxy.
counter = 0
request = function()
  counter = counter + 1
  local a = math.floor(counter / 65536) % 256
  local b = math.floor(counter / 256) % 256
  local c = counter % 256
  return wrk.format("GET", "/v1/pets", {["X-Forwarded-For"] = "10." .. a .. "." .. b .. "." .. c})
end
