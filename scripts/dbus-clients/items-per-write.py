"""PropertiesChanged signals against the replies of pipelined writes (DaemonTests.itemsPerWrite).
Sends pipelined writes to the login collection and prints, in arrival order, `I` for each
PropertiesChanged that carries its Items (the value), `L` for one that carries its Label, and
`R` for each reply: first for 100 CreateItem calls, then for CreateItem, Set(Label), CreateItem;
then a third line: how many items the last Items received lists (the collection starts empty)."""
from jeepney import MatchRule, MessageType, message_bus, new_method_call
from jeepney.low_level import HeaderFields

from prelude import COLLECTION, LOGIN, address, connect, plain_session

PROPERTIES = address(LOGIN, "org.freedesktop.DBus.Properties")
conn = connect()
session = plain_session(conn)
rule = MatchRule(type="signal", interface="org.freedesktop.DBus.Properties", member="PropertiesChanged", path=LOGIN)
conn.send_and_get_reply(message_bus.AddMatch(rule))
# Read the collection, as libsecret's collection objects do: secretd then tells this client about items.
conn.send_and_get_reply(new_method_call(PROPERTIES, "GetAll", "s", ("org.freedesktop.Secret.Collection",)))


def create(n):
    properties = {"org.freedesktop.Secret.Item.Label": ("s", "item %d" % n),
                  "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"n": str(n)})}
    return new_method_call(COLLECTION, "CreateItem", "a{sv}(oayays)b",
                           (properties, (session, b"", b"s", "text/plain"), False))


def events(calls):
    """Sends all calls before reading any reply; the events up to the last reply."""
    serials = set()
    for call in calls:
        serial = next(conn.outgoing_serial)
        serials.add(serial)
        conn.send(call, serial=serial)
    global last_items
    seen = ""
    while serials:
        message = conn.receive(timeout=30)
        kind = message.header.message_type
        if kind == MessageType.signal and message.header.fields.get(HeaderFields.member) == "PropertiesChanged":
            interface, changed, invalidated = message.body
            if "Items" in changed:
                last_items = set(changed["Items"][1])
            seen += ("I" if "Items" in changed else "") + ("L" if "Label" in changed else "")
        elif message.header.fields.get(HeaderFields.reply_serial) in serials:
            if kind == MessageType.error:
                raise RuntimeError(message.header.fields.get(HeaderFields.error_name))
            serials.discard(message.header.fields.get(HeaderFields.reply_serial))
            seen += "R"
    return seen


last_items = set()
print(events([create(n) for n in range(100)]))
label = new_method_call(PROPERTIES, "Set", "ssv", ("org.freedesktop.Secret.Collection", "Label", ("s", "Renamed")))
print(events([create(100), label, create(101)]))
print(len(last_items))
