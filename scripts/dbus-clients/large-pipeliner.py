"""Sends large ImportItems batches (many small values each) without waiting for the replies,
then reads them all (DaemonTests.largeCallsPipelined): what secretd's call quota does with one
client's large calls waiting (64 MiB of arguments each client), when each is measured on the
main loop only up to 32 KiB and whole once it is read.
    large-pipeliner.py COUNT ITEMS
COUNT batches of ITEMS items, each with a 4,000-byte label. Prints as JSON how many batches were
stored, how many calls were refused with LimitsExceeded, and any other error names."""
import json
import sys

from jeepney import MessageType, new_method_call
from jeepney.low_level import HeaderFields

from prelude import ROOT, address, connect, plain_session

count, size = int(sys.argv[1]), int(sys.argv[2])
conn = connect()
session = plain_session(conn)
importing = address(ROOT, "io.github.secretd.Import1")
serials = set()
for n in range(count):
    batch = [({"org.freedesktop.Secret.Item.Label": ("s", ("batch %d item %d " % (n, i)).ljust(4000, ".")),
               "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"large-pipelined": "%d-%d" % (n, i)})},
              (session, b"", b"secret", "text/plain")) for i in range(size)]
    serial = next(conn.outgoing_serial)
    serials.add(serial)
    conn.send(new_method_call(importing, "ImportItems", "sba(a{sv}(oayays))", ("", False, batch)), serial=serial)
stored, refused, other = 0, 0, []
while serials:
    message = conn.receive(timeout=300)
    serial = message.header.fields.get(HeaderFields.reply_serial)
    if serial not in serials:
        continue
    serials.discard(serial)
    if message.header.message_type == MessageType.error:
        name = message.header.fields.get(HeaderFields.error_name)
        if name == "org.freedesktop.DBus.Error.LimitsExceeded":
            refused += 1
        else:
            other.append(name)
    else:
        stored += 1
print(json.dumps({"stored": stored, "refused": refused, "other": other}), flush=True)
