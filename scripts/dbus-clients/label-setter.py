"""A client that renames one item of its own (Properties.Set of its Label) every 5 ms for
SECONDS: a write that is not a method of the Secret Service, beside another client's large
writes (bench/stall.sh).
    label-setter.py SECONDS
Prints as JSON the sets answered, the refused ones, and the median and maximum time a set took,
in ms."""
import json
import sys
import time

from prelude import COLLECTION, address, call, connect, plain_session

seconds = float(sys.argv[1])
conn = connect()
session = plain_session(conn)
properties = {"org.freedesktop.Secret.Item.Label": ("s", "renamed 0"),
              "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"writer": "label-setter"})}
item = call(conn, COLLECTION, "CreateItem", "a{sv}(oayays)b",
            (properties, (session, b"", b"s", "text/plain"), True))[0]
target = address(item, "org.freedesktop.DBus.Properties")
times, refused, n, end = [], 0, 0, time.time() + seconds
while time.time() < end:
    n += 1
    started = time.time()
    try:
        call(conn, target, "Set", "ssv", ("org.freedesktop.Secret.Item", "Label", ("s", "renamed %d" % n)))
    except RuntimeError:
        refused += 1
    times.append(time.time() - started)
    time.sleep(0.005)
times.sort()
print(json.dumps({"sets": len(times) - refused, "refused": refused,
                  "median_ms": round(1000 * times[len(times) // 2], 2) if times else None,
                  "max_ms": round(1000 * times[-1], 2) if times else None}), flush=True)
