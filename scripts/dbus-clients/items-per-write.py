"""The collection's signals against the replies of pipelined writes (DaemonTests.itemsPerWrite).
Sends pipelined writes to the login collection and prints, for each batch, one JSON line: the
events in arrival order (`C` for each ItemCreated, `I` for each PropertiesChanged that carries
its Items (the value), `L` for one that carries its Label, `R` for each reply, until a second
after the last reply) and how many items the last Items received lists. First 100 CreateItem
calls, then CreateItem, Set(Label), CreateItem (the collection starts empty)."""
import json
import time

from jeepney import MatchRule, MessageType, message_bus, new_method_call
from jeepney.low_level import HeaderFields

from prelude import COLLECTION, LOGIN, address, connect, plain_session

PROPERTIES = address(LOGIN, "org.freedesktop.DBus.Properties")
conn = connect()
session = plain_session(conn)
for rule in (MatchRule(type="signal", interface="org.freedesktop.DBus.Properties", member="PropertiesChanged", path=LOGIN),
             MatchRule(type="signal", interface="org.freedesktop.Secret.Collection", member="ItemCreated", path=LOGIN)):
    conn.send_and_get_reply(message_bus.AddMatch(rule))
# Read the collection, as libsecret's collection objects do: secretd then tells this client about items.
conn.send_and_get_reply(new_method_call(PROPERTIES, "GetAll", "s", ("org.freedesktop.Secret.Collection",)))


def create(n):
    properties = {"org.freedesktop.Secret.Item.Label": ("s", "item %d" % n),
                  "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"n": str(n)})}
    return new_method_call(COLLECTION, "CreateItem", "a{sv}(oayays)b",
                           (properties, (session, b"", b"s", "text/plain"), False))


def events(calls):
    """Sends all calls before reading any reply; the events up to a second after the last reply."""
    serials = set()
    for call in calls:
        serial = next(conn.outgoing_serial)
        serials.add(serial)
        conn.send(call, serial=serial)
    last_items = None
    seen = ""
    settled = None
    while settled is None or time.monotonic() < settled:
        try:
            message = conn.receive(timeout=30 if settled is None else max(0.01, settled - time.monotonic()))
        except TimeoutError:
            break
        kind = message.header.message_type
        member = message.header.fields.get(HeaderFields.member)
        if kind == MessageType.signal and member == "PropertiesChanged":
            interface, changed, invalidated = message.body
            if "Items" in changed:
                last_items = len(changed["Items"][1])
            seen += ("I" if "Items" in changed else "") + ("L" if "Label" in changed else "")
        elif kind == MessageType.signal and member == "ItemCreated":
            seen += "C"
        elif message.header.fields.get(HeaderFields.reply_serial) in serials:
            if kind == MessageType.error:
                raise RuntimeError(message.header.fields.get(HeaderFields.error_name))
            serials.discard(message.header.fields.get(HeaderFields.reply_serial))
            seen += "R"
            if not serials:
                settled = time.monotonic() + 1
    return json.dumps({"events": seen, "last_items": last_items})


print(events([create(n) for n in range(100)]), flush=True)
label = new_method_call(PROPERTIES, "Set", "ssv", ("org.freedesktop.Secret.Collection", "Label", ("s", "Renamed")))
print(events([create(100), label, create(101)]), flush=True)
