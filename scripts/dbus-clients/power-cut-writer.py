"""Stores, replaces and deletes items as fast as it can until killed (PowerCutTests).
    power-cut-writer.py NAME LOG
Works on five keys of its own, NAME-0 to NAME-4 (attributes power-cut=NAME and key=KEY;
label `KEY vN` for item N),
through a plain session: three calls in four store item N under a key (CreateItem with replace,
so the first stores and later ones replace), the fourth deletes the key's item. Before each
call it appends `B NAME KEY TOKEN` to LOG (`-` as the token: a delete), after its reply
`A NAME KEY TOKEN`, each line in one write to a file opened O_APPEND: the same file the
recording shim appends secretd's writes and syncs to, so the lines fall between them in the
order things happened. A call that fails is logged `F NAME KEY TOKEN` and the writer goes on.
Item N's secret is secret(NAME, N)."""
import os
import sys

from prelude import COLLECTION, address, call, connect, plain_session


def secret(name, n):
    """Item N's secret: mostly 40 to 239 bytes, every fifth 5000 to 7999 (on overflow pages)."""
    size = 5000 + (n * 7919) % 3000 if n % 5 == 0 else 40 + (n * 7919) % 200
    unit = ("%s-%d:" % (name, n)).encode()
    return (unit * (size // len(unit) + 1))[:size]


name, log = sys.argv[1], sys.argv[2]
fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
conn = connect()
session = plain_session(conn)
n = 0
while True:
    n += 1
    key = "%s-%d" % (name, n % 5)
    token = "-" if n % 4 == 0 else "v%d" % n
    os.write(fd, ("B %s %s %s\n" % (name, key, token)).encode())
    try:
        if token == "-":
            for path in call(conn, COLLECTION, "SearchItems", "a{ss}", ({"power-cut": name, "key": key},))[0]:
                call(conn, address(path, "org.freedesktop.Secret.Item"), "Delete")
        else:
            properties = {"org.freedesktop.Secret.Item.Label": ("s", "%s %s" % (key, token)),
                          "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"power-cut": name, "key": key})}
            call(conn, COLLECTION, "CreateItem", "a{sv}(oayays)b",
                 (properties, (session, b"", secret(name, n), "text/plain"), True))
        os.write(fd, ("A %s %s %s\n" % (name, key, token)).encode())
    except (RuntimeError, OSError, ConnectionError) as error:
        os.write(fd, ("F %s %s %s %s\n" % (name, key, token, error)).encode())
        if isinstance(error, (OSError, ConnectionError)):
            sys.exit(1)
