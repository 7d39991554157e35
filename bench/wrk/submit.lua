-- bench/wrk/submit.lua — POST /v1/teams/{team}/jobs with the job body of
-- the README's submission example (SPEC §3), for bench/http.sh.
-- Environment: BENCH_TOKEN (an HS256 member token of the team). The URL
-- given to wrk is the jobs collection, e.g. http://H:P/v1/teams/bench/jobs.
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
wrk.headers["Content-Type"] = "application/json"
wrk.body = [[{"name": "finetune-gemma-2b", "queue": "main", "priority_class": "default",
 "task_count": 2, "parallelism": 2,
 "task": {"image": "us-docker.pkg.dev/p/r/trainer:1.2",
          "commands": ["python", "train.py", "--epochs=8"],
          "env": {"EPOCHS": "8"},
          "cpu_milli": 2000, "memory_mib": 10240, "gpu": 2},
 "max_run_duration_s": 3600, "labels": {"experiment": "sql-tune"}}]]

-- count answers other than 201 (wrk's own "Non-2xx" misses e.g. 200)
local bad = 0
function response(status, headers, body)
  if status ~= 201 then
    bad = bad + 1
    if bad <= 3 then io.stderr:write("submit: HTTP " .. status .. ": " .. body .. "\n") end
  end
end
