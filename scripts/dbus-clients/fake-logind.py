"""systemd-logind as secretd hears it, on a private bus standing in for the system bus
(LogindTests): PrepareForSleep and a session's Lock, each from logind's own name or from an
impostor that does not own it.
    fake-logind.py serve DIR     own org.freedesktop.login1 and answer the sessions' User
                                 property (the session at .../session/uid_N is uid N's); emit
                                 what each file DIR/emit-K asks ("sleep", "wake", "lock UID"),
                                 then write DIR/done-K
    fake-logind.py impostor WHAT emit WHAT ("sleep", "lock UID") once without owning the name
Prints "ready" once it serves."""
import os
import sys
import time

from jeepney import DBusAddress, MessageType, new_method_return, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection
from jeepney.low_level import HeaderFields

NAME = "org.freedesktop.login1"


def signal_for(conn, what):
    if what in ("sleep", "wake"):
        manager = DBusAddress("/org/freedesktop/login1", interface="org.freedesktop.login1.Manager")
        return new_signal(manager, "PrepareForSleep", "b", (what == "sleep",))
    uid = what.split()[1]
    session = DBusAddress("/org/freedesktop/login1/session/uid_%s" % uid, interface="org.freedesktop.login1.Session")
    return new_signal(session, "Lock")


conn = open_dbus_connection(bus="SYSTEM")
if sys.argv[1] == "impostor":
    conn.send(signal_for(conn, sys.argv[2]))
    time.sleep(0.5)
    print("sent", flush=True)
    sys.exit(0)

directory = sys.argv[2]
reply = conn.send_and_get_reply(message_bus.RequestName(NAME, 4))
assert reply.body[0] == 1, reply.body
print("ready", flush=True)
while True:
    for entry in sorted(os.listdir(directory)):
        if entry.startswith("emit-"):
            path = os.path.join(directory, entry)
            with open(path) as f:
                what = f.read().strip()
            os.unlink(path)
            conn.send(signal_for(conn, what))
            open(os.path.join(directory, "done-" + entry[5:]), "w").close()
    try:
        message = conn.receive(timeout=0.1)
    except TimeoutError:
        continue
    fields = message.header.fields
    if message.header.message_type == MessageType.method_call and fields.get(HeaderFields.member) == "Get":
        path = fields.get(HeaderFields.path)
        uid = int(path.rsplit("uid_", 1)[1]) if "uid_" in path else 0
        conn.send(new_method_return(message, "v", (("(uo)", (uid, "/org/freedesktop/login1/user/_%d" % uid)),)))
