-- bench/wrk/get.lua — GET /v1/teams/{team}/jobs/{id}, cycling over the
-- paths listed one per line in BENCH_PATHS (written by bench/http.sh from
-- the jobs the submit run created). Environment: BENCH_TOKEN, BENCH_PATHS;
-- BENCH_COOKIE instead of BENCH_TOKEN sends that Cookie header with the
-- console's X-GPUGate-CSRF header (bench/oidc.sh's session row).
local paths = {}
for line in io.lines(os.getenv("BENCH_PATHS")) do
  paths[#paths + 1] = line
end
local cookie = os.getenv("BENCH_COOKIE")
local headers
if cookie and cookie ~= "" then
  headers = {["Cookie"] = cookie, ["X-GPUGate-CSRF"] = "1"}
else
  headers = {["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")}
end
local i = 0

function setup(thread)
  -- spread the threads over the list
  thread:set("offset", math.random(#paths))
end

function init(args)
  i = (offset or 0)
end

function request()
  i = i % #paths + 1
  return wrk.format("GET", paths[i], headers)
end

local bad = 0
function response(status, headers, body)
  if status ~= 200 then
    bad = bad + 1
    if bad <= 3 then io.stderr:write("get: HTTP " .. status .. ": " .. body .. "\n") end
  end
end
