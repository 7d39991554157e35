-- bench/wrk/slurm-get.lua — GET /slurm/v0.0.38/job/{id}, cycling over the
-- paths listed one per line in BENCH_PATHS (the jobs bench/slurm.sh's
-- submit run created). Environment: SLURM_BENCH_USER, SLURM_BENCH_TOKEN, BENCH_PATHS.
local paths = {}
for line in io.lines(os.getenv("BENCH_PATHS")) do
  paths[#paths + 1] = line
end
local headers = {["X-SLURM-USER-NAME"] = os.getenv("SLURM_BENCH_USER"),
                 ["X-SLURM-USER-TOKEN"] = os.getenv("SLURM_BENCH_TOKEN")}
local i = 0

function setup(thread)
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
  if status ~= 200 or not body:find('"job_id"') then
    bad = bad + 1
    if bad <= 3 then io.stderr:write("slurm read: HTTP " .. status .. ": " .. body:sub(1, 300) .. "\n") end
  end
end
