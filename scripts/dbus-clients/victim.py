"""An ordinary client beside the flooders (ClientFaultTests.flood, and the `flood` memory
scenario of `make bench`).
    victim.py SECONDS
Stores, searches and reads back for SECONDS, recording each operation's latency; a call
unanswered after 60 s is a failure. Prints as JSON the operations, the first failures and how
many there were, and the median, 95th percentile and maximum latency in ms."""
import json
import sys
import time

from prelude import COLLECTION, SERVICE, address, call, connect, plain_session

seconds = float(sys.argv[1])
conn = connect()
session = plain_session(conn)
latencies, failures, end, n = [], [], time.time() + seconds, 0
while time.time() < end:
    n += 1
    started = time.time()
    try:
        value = ("victim-%d" % n).encode()
        properties = {"org.freedesktop.Secret.Item.Label": ("s", "victim"),
                      "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"victim": str(n % 5)})}
        path = call(conn, COLLECTION, "CreateItem", "a{sv}(oayays)b",
                    (properties, (session, b"", value, "text/plain"), True))[0]
        found = call(conn, SERVICE, "SearchItems", "a{ss}", ({"victim": str(n % 5)},))[0]
        secret = call(conn, address(path, "org.freedesktop.Secret.Item"), "GetSecret", "o", (session,))[0][2]
        if found != [path] or secret != value:
            failures.append("operation %d read back %r %r" % (n, found, secret))
    except Exception as error:
        failures.append("operation %d: %s: %s" % (n, type(error).__name__, error))
    latencies.append(time.time() - started)
    time.sleep(0.05)
latencies.sort()
print(json.dumps({"operations": n, "failures": failures[:10], "failure_count": len(failures),
                  "median_ms": round(1000 * latencies[len(latencies) // 2]),
                  "p95_ms": round(1000 * latencies[int(len(latencies) * 0.95)]),
                  "max_ms": round(1000 * latencies[-1])}), flush=True)
