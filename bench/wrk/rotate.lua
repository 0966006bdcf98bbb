-- Rotate through a file of request paths (one a line) and print wrk's figures as JSON.
--
--   BENCH_KEY=pmd_live_... wrk -t1 -c16 -d20s -s bench/wrk/rotate.lua http://127.0.0.1:8000 -- paths.txt
--
-- Each thread starts at its own random place in the list, so threads do not ask for the
-- same path in step. BENCH_KEY, when set, is sent as the bearer key (an environment
-- variable rather than an argument, so it never shows in the process list).
-- done() prints one line starting with BENCH_JSON: requests, duration, errors and latency
-- percentiles in microseconds, which bench/run.py reads. With BENCH_COUNT_CACHE set, each
-- answer's X-Cache header is counted too (hits and misses in the JSON); only then is a
-- response() function defined, as it costs wrk a header table per answer. With BENCH_DELAY_MS
-- set, each connection waits that many milliseconds after an answer before its next request
-- (wrk's delay()), so the run asks at a chosen rate below saturation.

local counter = 0
local threads = {}

function setup(thread)
  counter = counter + 1
  thread:set("thread_number", counter)
  thread:set("hits", 0)
  thread:set("misses", 0)
  threads[counter] = thread
end

if os.getenv("BENCH_COUNT_CACHE") then
  function response(status, headers, body)
    local cache = headers["X-Cache"] or headers["x-cache"]
    if cache == "HIT" then
      hits = hits + 1
    else
      misses = misses + 1
    end
  end
end

local pause = tonumber(os.getenv("BENCH_DELAY_MS") or "")
if pause ~= nil and pause > 0 then
  function delay()
    return pause
  end
end

function init(args)
  local file = args[1]
  if file == nil then
    error("usage: wrk ... -s rotate.lua URL -- PATHS_FILE")
  end
  paths = {}
  for line in io.lines(file) do
    if #line > 0 then
      paths[#paths + 1] = line
    end
  end
  if #paths == 0 then
    error("no paths in " .. file)
  end
  math.randomseed(7919 * (thread_number or 1))
  index = math.random(#paths)
  local key = os.getenv("BENCH_KEY")
  if key ~= nil and #key > 0 then
    wrk.headers["Authorization"] = "Bearer " .. key
  end
end

function request()
  index = index % #paths + 1
  return wrk.format("GET", paths[index])
end

function done(summary, latency, requests)
  local e = summary.errors
  local hits, misses = 0, 0
  for _, thread in ipairs(threads) do
    hits = hits + thread:get("hits")
    misses = misses + thread:get("misses")
  end
  io.write(string.format(
    'BENCH_JSON {"requests": %d, "duration_us": %d, "bytes": %d, "hits": %d, "misses": %d, '
      .. '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, '
      .. '"latency_us": {"p50": %d, "p90": %d, "p99": %d, "p999": %d, "max": %d, "mean": %.1f}}\n',
    summary.requests, summary.duration, summary.bytes, hits, misses,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean))
end
