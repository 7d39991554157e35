-- bench/wrk/slurm-submit.lua — POST /slurm/v0.0.38/job/submit with
-- bench/wrk/slurm-job.json (a held batch job comparable to gpugate's
-- submission example), for bench/slurm.sh. Environment:
-- SLURM_BENCH_USER and SLURM_BENCH_TOKEN (its Slurm JWT).
local f = assert(io.open("bench/wrk/slurm-job.json"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["X-SLURM-USER-NAME"] = os.getenv("SLURM_BENCH_USER")
wrk.headers["X-SLURM-USER-TOKEN"] = os.getenv("SLURM_BENCH_TOKEN")
wrk.headers["Content-Type"] = "application/json"

local bad = 0
function response(status, headers, body)
  if status ~= 200 or not body:find('"job_id"') then
    bad = bad + 1
    if bad <= 3 then io.stderr:write("slurm submit: HTTP " .. status .. ": " .. body:sub(1, 300) .. "\n") end
  end
end
