"""Calls that carry file descriptors (ClientFaultTests.descriptorFlood). Any D-Bus message may
carry up to 16 (dbus-daemon's max_message_unix_fds), referenced by its arguments or not, and the
receiver holds them as long as it holds the message.
    fd-flooder.py CALLS FDS
sends CALLS `ReadAlias("default")` calls at once, each with FDS descriptors of /dev/null that its
arguments do not name, then reads the replies for up to 30 s and prints as JSON how many it
sent and the replies and errors it got, by error name."""
import array
import errno
import json
import os
import socket
import sys
import time
from collections import Counter

from jeepney import MessageType, new_method_call
from jeepney.io.blocking import open_dbus_connection
from jeepney.low_level import HeaderFields

from prelude import SERVICE

calls, descriptors = int(sys.argv[1]), int(sys.argv[2])
conn = open_dbus_connection(bus="SESSION", enable_fds=True)
null = os.open("/dev/null", os.O_RDONLY)
rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [null] * descriptors))]
for serial in range(1000, 1000 + calls):
    message = new_method_call(SERVICE, "ReadAlias", "s", ("default",))
    message.header.fields[HeaderFields.unix_fds] = descriptors
    data = message.serialise(serial=serial)
    waited = 0
    while True:
        try:
            conn.sock.sendmsg([data], rights)
            break
        except OSError as error:
            # The kernel holds a user's descriptors in flight (sent, not yet received, on any
            # socket: here the bus's to secretd) to the sender's limit of open files; it frees
            # up as they are received.
            if error.errno != errno.ETOOMANYREFS or waited > 30:
                raise
            time.sleep(0.01)
            waited += 0.01
outcomes = Counter()
deadline = time.monotonic() + 30
while sum(outcomes.values()) < calls and time.monotonic() < deadline:
    try:
        reply = conn.receive(timeout=deadline - time.monotonic())
    except TimeoutError:
        break
    kind = reply.header.message_type
    if kind == MessageType.method_return:
        outcomes["reply"] += 1
    elif kind == MessageType.error:
        outcomes[reply.header.fields.get(HeaderFields.error_name, "?")] += 1
print(json.dumps({"sent": calls, "descriptors_each": descriptors, "outcomes": outcomes}), flush=True)
