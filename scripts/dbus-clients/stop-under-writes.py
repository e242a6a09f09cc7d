"""secretd stopped under a flood of writes (DaemonTests.repliesAtStop).
    stop-under-writes.py SECRETD_PID ROUND
Pipelines 400 CreateItem calls (attribute `stop=ROUND`), sends secretd SIGTERM after the 200th,
and prints how many calls got a reply and how many an error."""
import os
import signal
import sys

from jeepney import MessageType, new_method_call
from jeepney.low_level import HeaderFields

from prelude import COLLECTION, connect, plain_session

conn = connect()
session = plain_session(conn)
serials = set()
for n in range(400):
    properties = {"org.freedesktop.Secret.Item.Label": ("s", "item %d" % n),
                  "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"stop": sys.argv[2], "n": str(n)})}
    serial = next(conn.outgoing_serial)
    serials.add(serial)
    conn.send(new_method_call(COLLECTION, "CreateItem", "a{sv}(oayays)b",
                              (properties, (session, b"", b"s", "text/plain"), False)), serial=serial)
    if n == 200:
        os.kill(int(sys.argv[1]), signal.SIGTERM)
replies = errors = 0
names = {}
while serials:
    message = conn.receive(timeout=30)
    serial = message.header.fields.get(HeaderFields.reply_serial)
    if serial in serials:
        serials.discard(serial)
        if message.header.message_type == MessageType.error:
            errors += 1
            name = message.header.fields.get(HeaderFields.error_name)
            names[name] = names.get(name, 0) + 1
        else:
            replies += 1
print(replies, errors)
print(names, file=sys.stderr)
