"""systemd-logind as secretd hears it, on a private bus standing in for the system bus
(LogindTests): PrepareForSleep and a session's Lock, each from logind's own name or from an
impostor that does not own it.
    fake-logind.py serve DIR     own org.freedesktop.login1 and answer the sessions' User
                                 property (the session at .../session/uid_N is uid N's); emit
                                 what each file DIR/emit-K asks ("sleep", "wake", "lock UID"),
                                 then write DIR/done-K once every other connection on the bus
                                 has handled it
    fake-logind.py impostor WHAT emit WHAT ("sleep", "lock UID") once without owning the name,
                                 and print "sent" once every other connection has handled it
Prints "ready" once it serves.

"Handled" is a Peer.Ping sent after the signal, to every other unique name on the bus (secretd's
system-bus connection among them): the bus delivers one sender's messages in order, and sd-bus
answers the Ping only after it has dispatched the signal, including any call its handler made
(the session's User property, which this process answers meanwhile)."""
import os
import sys

from jeepney import DBusAddress, MessageType, new_method_call, new_method_return, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection
from jeepney.low_level import HeaderFields

NAME = "org.freedesktop.login1"


def signal_for(what):
    if what in ("sleep", "wake"):
        manager = DBusAddress("/org/freedesktop/login1", interface="org.freedesktop.login1.Manager")
        return new_signal(manager, "PrepareForSleep", "b", (what == "sleep",))
    uid = what.split()[1]
    session = DBusAddress("/org/freedesktop/login1/session/uid_%s" % uid, interface="org.freedesktop.login1.Session")
    return new_signal(session, "Lock")


def ping(name):
    return new_method_call(DBusAddress("/", bus_name=name, interface="org.freedesktop.DBus.Peer"), "Ping")


def others(names, conn, skip=()):
    return [name for name in names if name.startswith(":") and name != conn.unique_name and name not in skip]


conn = open_dbus_connection(bus="SYSTEM")
if sys.argv[1] == "impostor":
    conn.send(signal_for(sys.argv[2]))
    # Nothing to answer here, so plain calls; logind's stand-in does not answer Ping.
    owner = conn.send_and_get_reply(message_bus.GetNameOwner(NAME)).body
    names = conn.send_and_get_reply(message_bus.ListNames()).body[0]
    for name in others(names, conn, skip=owner):
        conn.send_and_get_reply(ping(name), timeout=20)
    print("sent", flush=True)
    sys.exit(0)

directory = sys.argv[2]
reply = conn.send_and_get_reply(message_bus.RequestName(NAME, 4))
assert reply.body[0] == 1, reply.body
print("ready", flush=True)
serials = iter(range(1_000_000, 2_000_000))
listing = {}  # serial of a ListNames -> the emit number it is for
waiting = {}  # emit number -> serials of the Pings not yet answered


def send(message):
    serial = next(serials)
    conn.send(message, serial=serial)
    return serial


def settled(number):
    if not waiting[number]:
        del waiting[number]
        open(os.path.join(directory, "done-" + number), "w").close()


while True:
    for entry in sorted(os.listdir(directory)):
        if entry.startswith("emit-"):
            path = os.path.join(directory, entry)
            with open(path) as f:
                what = f.read().strip()
            os.unlink(path)
            conn.send(signal_for(what))
            listing[send(message_bus.ListNames())] = entry[5:]
    try:
        message = conn.receive(timeout=0.05)
    except TimeoutError:
        continue
    fields = message.header.fields
    kind = message.header.message_type
    if kind == MessageType.method_call and fields.get(HeaderFields.member) == "Get":
        path = fields.get(HeaderFields.path)
        uid = int(path.rsplit("uid_", 1)[1]) if "uid_" in path else 0
        conn.send(new_method_return(message, "v", (("(uo)", (uid, "/org/freedesktop/login1/user/_%d" % uid)),)))
    elif kind in (MessageType.method_return, MessageType.error):
        serial = fields.get(HeaderFields.reply_serial)
        if serial in listing:
            number = listing.pop(serial)
            names = message.body[0] if kind == MessageType.method_return else []
            waiting[number] = {send(ping(name)) for name in others(names, conn)}
            settled(number)
        else:
            for number, pending in list(waiting.items()):
                if serial in pending:
                    pending.discard(serial)
                    settled(number)
