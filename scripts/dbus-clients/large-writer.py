"""A client that stores large items for SECONDS, to measure what its writes cost others
(bench/stall.sh) and to be refused by the quotas (QuotaTests).
    large-writer.py SECONDS ATTRIBUTES ATTRIBUTE_BYTES SECRET_BYTES [NAME]
Each item has ATTRIBUTES attributes of ATTRIBUTE_BYTES-byte values and a SECRET_BYTES secret.
Prints as JSON how many items were stored, the first refusal (its D-Bus error name) and the
median and maximum time a store took, in ms."""
import json
import sys
import time

from prelude import COLLECTION, call, connect, plain_session

seconds, count, size, secret_size = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
name = sys.argv[5] if len(sys.argv) > 5 else "large"
conn = connect()
session = plain_session(conn)
stored, refusal, times, end = 0, None, [], time.time() + seconds
while time.time() < end:
    attributes = {"a%03d" % i: ("%s-%d-" % (name, stored)).ljust(size, "x") for i in range(count)}
    attributes["writer"] = name
    properties = {"org.freedesktop.Secret.Item.Label": ("s", "%s %d" % (name, stored)),
                  "org.freedesktop.Secret.Item.Attributes": ("a{ss}", attributes)}
    started = time.time()
    try:
        call(conn, COLLECTION, "CreateItem", "a{sv}(oayays)b",
             (properties, (session, b"", b"s" * secret_size, "application/octet-stream"), False), timeout=120)
    except RuntimeError as error:
        refusal = str(error)
        break
    times.append(time.time() - started)
    stored += 1
times.sort()
print(json.dumps({"stored": stored, "refusal": refusal,
                  "median_ms": round(1000 * times[len(times) // 2], 1) if times else None,
                  "max_ms": round(1000 * times[-1], 1) if times else None}), flush=True)
