"""A client that stores large items for SECONDS, to measure what its writes cost others
(bench/stall.sh) and to be refused by the quotas (QuotaTests).
    large-writer.py SECONDS ATTRIBUTES ATTRIBUTE_BYTES SECRET_BYTES [NAME [set-secret|import]]
Each item has ATTRIBUTES attributes of ATTRIBUTE_BYTES-byte values and a SECRET_BYTES secret.
With set-secret, one item is created and its secret then set again and again (Item.SetSecret),
each set counting as a store. With import, items go in batches of 1,000 new ones
(secretd's Import1.ImportItems, as `secretctl import` sends them), each batch counting as a store.
Prints as JSON how many items were stored, the first refusal (its D-Bus error name) and the
median and maximum time a store took, in ms."""
import json
import sys
import time

from prelude import COLLECTION, ROOT, address, call, connect, plain_session

IMPORTING = address(ROOT, "io.github.secretd.Import1")

seconds, count, size, secret_size = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
name = sys.argv[5] if len(sys.argv) > 5 else "large"
sets = len(sys.argv) > 6 and sys.argv[6] == "set-secret"
imports = len(sys.argv) > 6 and sys.argv[6] == "import"
conn = connect()
session = plain_session(conn)
stored, refusal, times, end = 0, None, [], time.time() + seconds
while time.time() < end:
    attributes = {"a%03d" % i: ("%s-%d-" % (name, stored)).ljust(size, "x") for i in range(count)}
    attributes["writer"] = name
    properties = {"org.freedesktop.Secret.Item.Label": ("s", "%s %d" % (name, stored)),
                  "org.freedesktop.Secret.Item.Attributes": ("a{ss}", attributes)}
    started = time.time()
    secret = (session, b"", b"s" * secret_size, "application/octet-stream")
    try:
        if imports:
            batch = []
            for n in range(1000):
                values = {"a%03d" % i: ("%s-%d-%d-" % (name, stored, n)).ljust(size, "x") for i in range(count)}
                values["writer"] = name
                batch.append(({"org.freedesktop.Secret.Item.Label": ("s", "%s %d %d" % (name, stored, n)),
                               "org.freedesktop.Secret.Item.Attributes": ("a{ss}", values)}, secret))
            started = time.time()
            call(conn, IMPORTING, "ImportItems", "sba(a{sv}(oayays))", ("", False, batch), timeout=120)
        elif sets and stored > 0:
            call(conn, address(item, "org.freedesktop.Secret.Item"), "SetSecret", "(oayays)", (secret,), timeout=120)
        else:
            item = call(conn, COLLECTION, "CreateItem", "a{sv}(oayays)b", (properties, secret, False), timeout=120)[0]
    except RuntimeError as error:
        refusal = str(error)
        break
    times.append(time.time() - started)
    stored += 1
times.sort()
print(json.dumps({"stored": stored, "refusal": refusal,
                  "median_ms": round(1000 * times[len(times) // 2], 1) if times else None,
                  "max_ms": round(1000 * times[-1], 1) if times else None}), flush=True)
