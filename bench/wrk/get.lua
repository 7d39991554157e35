-- bench/wrk/get.lua — GET /v1/teams/{team}/jobs/{id}, cycling over the
-- paths listed one per line in BENCH_PATHS (written by bench/http.sh from
-- the jobs the submit run created). Environment: BENCH_TOKEN, BENCH_PATHS.
local paths = {}
for line in io.lines(os.getenv("BENCH_PATHS")) do
  paths[#paths + 1] = line
end
local auth = "Bearer " .. os.getenv("BENCH_TOKEN")
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
  return wrk.format("GET", paths[i], {["Authorization"] = auth})
end

local bad = 0
function response(status, headers, body)
  if status ~= 200 then
    bad = bad + 1
    if bad <= 3 then io.stderr:write("get: HTTP " .. status .. ": " .. body .. "\n") end
  end
end
