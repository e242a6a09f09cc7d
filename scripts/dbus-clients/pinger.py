"""An ordinary client that asks one small thing (ReadAlias) every 10 ms for SECONDS and records
how long each answer took (bench/stall.sh: what another client's large writes cost it).
    pinger.py SECONDS
Prints as JSON the calls, and the median, 99th percentile and maximum latency in ms."""
import json
import sys
import time

from prelude import SERVICE, call, connect

seconds = float(sys.argv[1])
conn = connect()
latencies, end = [], time.time() + seconds
while time.time() < end:
    started = time.time()
    call(conn, SERVICE, "ReadAlias", "s", ("default",))
    latencies.append(time.time() - started)
    time.sleep(0.01)
latencies.sort()
print(json.dumps({"calls": len(latencies), "median_ms": round(1000 * latencies[len(latencies) // 2], 2),
                  "p99_ms": round(1000 * latencies[int(len(latencies) * 0.99)], 2),
                  "max_ms": round(1000 * latencies[-1], 2)}), flush=True)
