"""Checks what writer.py stored (ClientFaultTests.disconnectMidSession).
    writer-verifier.py NAME...
Prints as JSON, per writer, the items it finds (by `n`) and those whose label, attributes,
content type or secret is not what the writer stored."""
import json
import sys

from prelude import SERVICE, address, call, connect, content, plain_session

conn = connect()
session = plain_session(conn)
report = {}
for name in sys.argv[1:]:
    found, bad = [], []
    for path in call(conn, SERVICE, "SearchItems", "a{ss}", ({"fault-writer": name},))[0]:
        item = address(path, "org.freedesktop.Secret.Item")
        props = address(path, "org.freedesktop.DBus.Properties")
        attributes = call(conn, props, "Get", "ss", ("org.freedesktop.Secret.Item", "Attributes"))[0][1]
        n = int(attributes["n"])
        label = call(conn, props, "Get", "ss", ("org.freedesktop.Secret.Item", "Label"))[0][1]
        _, _, secret, content_type = call(conn, item, "GetSecret", "o", (session,))[0]
        found.append(n)
        if (secret != content(name, n) or label != "fault %s %d" % (name, n)
                or attributes != {"fault-writer": name, "n": str(n)} or content_type != "application/octet-stream"):
            bad.append(n)
    report[name] = {"found": sorted(found), "bad": bad}
print(json.dumps(report))
