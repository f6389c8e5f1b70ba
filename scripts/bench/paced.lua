-- Paces each connection: WRK_DELAY_MS between requests, so that the offered load is
-- about connections * 1000 / WRK_DELAY_MS requests per second (for latency at a fixed load).
local pause = tonumber(os.getenv("WRK_DELAY_MS") or "0")
function delay()
  return pause
end
