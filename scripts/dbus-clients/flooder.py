"""Sends calls as fast as it can (ClientFaultTests.flood, and the `flood` memory scenario of
`make bench`).
    flooder.py reading|deaf|silent SECONDS
`reading` reads the replies on another thread, `deaf` never reads them, `silent` flags the calls
NO_REPLY_EXPECTED. After SECONDS (and one more for the last replies) prints as JSON how many
calls it sent and, for `reading`, the replies and errors it got, by error name."""
import json
import sys
import threading
import time
from collections import Counter

from jeepney import MessageFlag, new_method_call
from jeepney.low_level import HeaderFields

from prelude import LOGIN, ROOT, SERVICE, address, connect

mode, seconds = sys.argv[1], float(sys.argv[2])
conn = connect()
messages = [
    new_method_call(SERVICE, "SearchItems", "a{ss}", ({"flood": "x"},)),
    new_method_call(address(ROOT, "org.freedesktop.DBus.Properties"), "Get", "ss",
                    ("org.freedesktop.Secret.Service", "Collections")),
    new_method_call(address(LOGIN, "org.freedesktop.DBus.Introspectable"), "Introspect"),
    new_method_call(SERVICE, "ReadAlias", "s", ("default",)),
]
if mode == "silent":
    for message in messages:
        message.header.flags |= MessageFlag.no_reply_expected
outcomes = Counter()


def read():
    while True:
        try:
            reply = conn.receive()
        except Exception:
            return
        outcomes[reply.header.fields.get(HeaderFields.error_name, "reply")] += 1


if mode == "reading":
    threading.Thread(target=read, daemon=True).start()
sent, end = 0, time.time() + seconds
while time.time() < end:
    conn.send(messages[sent % len(messages)])
    sent += 1
time.sleep(1)
print(json.dumps({"mode": mode, "sent": sent, "outcomes": dict(outcomes)}), flush=True)
