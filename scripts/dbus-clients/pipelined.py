"""A read sent right behind a write on the same connection (DaemonTests.readBehindWrite).
One connection sends a write and, without waiting, a read of what it writes; the read's reply
must show the write. Run for a new item (CreateItem, then SearchItems) and for a replaced one
(CreateItem with replace, then GetSecrets of its path). Prints the first failures and how many
there were.
    pipelined.py [SECRET_BYTES]   secrets padded to that size (default: a few bytes; from 32 KiB
                                  on, secretd reads, seals and writes them off its main loop)"""
import sys

from jeepney import MessageType, new_method_call
from jeepney.low_level import HeaderFields

from prelude import COLLECTION, SERVICE, connect, plain_session

size = int(sys.argv[1]) if len(sys.argv) > 1 else 0
conn = connect()
session = plain_session(conn)


def both(first, second):
    """Sends both calls before reading either reply; returns their replies."""
    serials = [next(conn.outgoing_serial), next(conn.outgoing_serial)]
    conn.send(first, serial=serials[0])
    conn.send(second, serial=serials[1])
    replies = {}
    while len(replies) < 2:
        message = conn.receive(timeout=30)
        serial = message.header.fields.get(HeaderFields.reply_serial)
        if serial in serials:
            if message.header.message_type == MessageType.error:
                raise RuntimeError(message.header.fields.get(HeaderFields.error_name))
            replies[serial] = message.body
    return replies[serials[0]], replies[serials[1]]


def padded(text):
    """`text` padded with dots to `size` bytes."""
    return text + "." * max(0, size - len(text))


def create(n, value):
    properties = {"org.freedesktop.Secret.Item.Label": ("s", "pipelined %d" % n),
                  "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"pipelined": str(n)})}
    return new_method_call(COLLECTION, "CreateItem", "a{sv}(oayays)b",
                           (properties, (session, b"", padded(value).encode(), "text/plain"), True))


paths, failures = {}, []
for n in range(40):
    created, found = both(create(n, "first-%d" % n),
                          new_method_call(SERVICE, "SearchItems", "a{ss}", ({"pipelined": str(n)},)))
    paths[n] = created[0]
    if found[0] != [created[0]]:
        failures.append("search %d: %r, created %r" % (n, found, created[0]))
for n in range(40):
    created, secrets = both(create(n, "second-%d" % n),
                            new_method_call(SERVICE, "GetSecrets", "aoo", ([paths[n]], session)))
    value = bytes(secrets[0].get(paths[n], (None, b"", b"", ""))[2]).decode()
    if created[0] != paths[n] or value != padded("second-%d" % n):
        failures.append("secret %d: %r at %r" % (n, value[:20], created[0]))
print("failures:", failures[:5], len(failures))
