-- POST /v1/pets with a small valid body.
wrk.method = "POST"
wrk.body = '{"name":"bench pet","categoryId":3,"status":"available"}'
wrk.headers["Content-Type"] = "application/json"
