"""secretd stopped under a flood of writes (DaemonTests.repliesAtStop).
    stop-under-writes.py SECRETD_PID ROUND [WRITERS [CALLS]]
WRITERS connections (1 unless given) each pipeline CALLS CreateItem calls (400 unless given;
attributes `stop=ROUND`, `w=WRITER`, `n=N`), taking turns call by call; secretd gets SIGTERM once
half of all the calls, and one more, are sent. Prints how many calls got a reply and how many an
error; stderr has the errors by name."""
import os
import signal
import sys

from jeepney import MessageType, new_method_call
from jeepney.low_level import HeaderFields

from prelude import COLLECTION, connect, plain_session

pid, stop = int(sys.argv[1]), sys.argv[2]
writers = int(sys.argv[3]) if len(sys.argv) > 3 else 1
calls = int(sys.argv[4]) if len(sys.argv) > 4 else 400
connections = [connect() for _ in range(writers)]
sessions = [plain_session(conn) for conn in connections]
serials = [set() for _ in connections]
sent = 0
for n in range(calls):
    for w, conn in enumerate(connections):
        properties = {"org.freedesktop.Secret.Item.Label": ("s", "item %d" % n),
                      "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"stop": stop, "w": str(w), "n": str(n)})}
        serial = next(conn.outgoing_serial)
        serials[w].add(serial)
        conn.send(new_method_call(COLLECTION, "CreateItem", "a{sv}(oayays)b",
                                  (properties, (sessions[w], b"", b"s", "text/plain"), False)), serial=serial)
        sent += 1
        if sent == writers * calls // 2 + 1:
            os.kill(pid, signal.SIGTERM)
replies = errors = 0
names = {}
for w, conn in enumerate(connections):
    while serials[w]:
        message = conn.receive(timeout=60)
        serial = message.header.fields.get(HeaderFields.reply_serial)
        if serial in serials[w]:
            serials[w].discard(serial)
            if message.header.message_type == MessageType.error:
                errors += 1
                name = message.header.fields.get(HeaderFields.error_name)
                names[name] = names.get(name, 0) + 1
            else:
                replies += 1
print(replies, errors)
print(names, file=sys.stderr)
