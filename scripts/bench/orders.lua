-- POST /v1/store/orders, each request for the next pet: ids from PETSTORE_BENCH_FIRST_PET on
-- (wrk runs one thread here), so that every order is for an available pet.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local next_pet = tonumber(os.getenv("PETSTORE_BENCH_FIRST_PET") or "1")
function request()
  local body = '{"petId":' .. next_pet .. '}'
  next_pet = next_pet + 1
  return wrk.format(nil, nil, nil, body)
end
