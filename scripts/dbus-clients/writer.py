"""Stores items as fast as it can until killed (ClientFaultTests.disconnectMidSession).
    writer.py NAME
Opens a DH session (and another every ten items, which it never uses nor closes), and prints
`start N` before each CreateItem and `ack N` after its reply. Item N holds content(NAME, N)."""
import sys

from secretstorage.util import format_secret, open_session

from prelude import COLLECTION, call, connect, content

name = sys.argv[1]
conn = connect()
session = open_session(conn)
assert session.encrypted
n = 0
while True:
    n += 1
    if n % 10 == 0:
        open_session(conn)  # a session it never uses nor closes
    properties = {"org.freedesktop.Secret.Item.Label": ("s", "fault %s %d" % (name, n)),
                  "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"fault-writer": name, "n": str(n)})}
    print("start %d" % n, flush=True)
    call(conn, COLLECTION, "CreateItem", "a{sv}(oayays)b",
         (properties, format_secret(session, content(name, n), "application/octet-stream"), False))
    print("ack %d" % n, flush=True)
