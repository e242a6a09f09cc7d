"""Listens to secretd's signals as a client would, and reports every one that reached it
(SignalAudienceTests).

    signal-listener.py MODE FENCE

MODE is `client` (calls secretd first and reads the login collection's properties, as
libsecret's collection objects and Seahorse do before they listen), `silent` (never calls
secretd, only listens), `caller` (calls secretd but reads no collection or item, as
libsecret's store, lookup and clear do: secretd tells it nothing about items) or `app` (a
`client` that, once the fence has passed, creates, renames and deletes an item of its own and
waits for the signals of each).
The listener subscribes to every signal of org.freedesktop.secrets, prints `{"ready": ...}`
once subscribed, and records signals until the login collection's Label becomes FENCE (the
signals of one sender arrive in order, so whatever it would have heard before the fence has
arrived by then). It then prints one JSON report and exits. Connecting is retried for 10 s:
in a sandbox the proxy's socket may not be listening yet."""
import collections
import json
import sys
import time

from jeepney import MatchRule, message_bus, new_method_call
from jeepney.low_level import HeaderFields

from prelude import B, COLLECTION, LOGIN, ROOT, address, call, connect, plain_session

mode, fence = sys.argv[1], sys.argv[2]


def connect_soon():
    deadline = time.monotonic() + 10
    while True:
        try:
            return connect()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def describe(message):
    fields = message.header.fields
    member = fields.get(HeaderFields.member)
    record = {"member": member, "path": fields.get(HeaderFields.path), "interface": fields.get(HeaderFields.interface),
              "unicast": fields.get(HeaderFields.destination) is not None}
    if member == "PropertiesChanged":
        interface, changed, invalidated = message.body
        record["changed"] = {name: value for name, (_, value) in changed.items()}  # variants by their value
        record["invalidated"] = list(invalidated)
    else:
        record["args"] = list(message.body)
    return record


conn = connect_soon()
report = {"mode": mode, "unique_name": conn.unique_name}
queue = collections.deque()
conn.filter(MatchRule(type="signal"), queue=queue)
if mode != "silent":
    # A call first: secretd learns who this client is. WhoAmI is secretd's own AccessGroups call.
    report["whoami"] = list(call(conn, address(ROOT, "io.github.secretd.AccessGroups1"), "WhoAmI"))
if mode in ("client", "app"):
    # What a collection object does when it is made: from then on secretd tells it about items.
    call(conn, address(LOGIN, "org.freedesktop.DBus.Properties"), "GetAll", "s", ("org.freedesktop.Secret.Collection",))
conn.send_and_get_reply(message_bus.AddMatch(MatchRule(type="signal", sender=B)), timeout=30)
report["names"] = list(conn.send_and_get_reply(message_bus.ListNames(), timeout=30).body[0])
print(json.dumps({"ready": conn.unique_name}), flush=True)

signals = []


def wait_for(predicate, timeout=60):
    """Records signals until one matches `predicate`; returns it."""
    deadline = time.monotonic() + timeout
    while True:
        while queue:
            message = queue.popleft()
            if message.header.fields.get(HeaderFields.sender) == "org.freedesktop.DBus":
                continue  # the bus's own NameAcquired
            record = describe(message)
            signals.append(record)
            if predicate(record):
                return record
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no matching signal; got %r" % signals)
        conn.recv_messages(timeout=left)


wait_for(lambda s: s["member"] == "PropertiesChanged" and s["path"] == LOGIN and s["changed"].get("Label") == fence)

if mode == "app":
    session = plain_session(conn)
    properties = {"org.freedesktop.Secret.Item.Label": ("s", "own item"),
                  "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"service": "own", "account": "app"})}
    item = call(conn, COLLECTION, "CreateItem", "a{sv}(oayays)b",
                (properties, (session, b"", b"own-secret", "text/plain"), False))[0]
    report["own_item"] = item
    wait_for(lambda s: s["member"] == "ItemCreated" and s["args"] == [item])
    call(conn, address(item, "org.freedesktop.DBus.Properties"), "Set", "ssv",
         ("org.freedesktop.Secret.Item", "Label", ("s", "own item renamed")))
    wait_for(lambda s: s["member"] == "PropertiesChanged" and s["path"] == item)
    call(conn, address(item, "org.freedesktop.Secret.Item"), "Delete")
    wait_for(lambda s: s["member"] == "ItemDeleted" and s["args"] == [item])
    # The collection's Items after ItemDeleted is the last signal of the deletion.
    wait_for(lambda s: s["member"] == "PropertiesChanged" and s["path"] == LOGIN and "Items" in s["changed"])

report["signals"] = signals
print(json.dumps(report), flush=True)
