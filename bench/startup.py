#!/usr/bin/env python3
"""The two halves of bench/startup.sh, on the bus of $DBUS_SESSION_BUS_ADDRESS (jeepney only,
as Debian's /usr/bin/python3 has it).

  startup.py fill COUNT
      stores COUNT items in the default collection of the provider that owns
      org.freedesktop.secrets (unlocked): a plain session, CreateItem calls sent 100 at a time.
  startup.py time ROUNDS NAME=BUS_ADDRESS...
      after one round uncounted, for each round, each bus in turn (the order turns every round): checks that nothing owns
      org.freedesktop.secrets, then times one call, Properties.Get(Service, Collections), from
      the moment it is sent (the bus then starts the provider from its activation file) to its
      reply: activation, the name owned and the first call answered. Then stops the provider
      (SIGTERM to the pid the bus gives for the name) and waits until the process is gone.
      Prints {"NAME": [ms, ...], ...} as JSON, one figure a round, in the order of the rounds.
  startup.py check DATABASE TIMES
      times SQLite's PRAGMA quick_check of a database that no process has open (read only, so
      nothing changes), TIMES times: the check secretd must make before it serves. Prints the
      figures in ms as a JSON list.
"""
import json
import os
import signal
import sqlite3
import sys
import time

from jeepney import DBusAddress, MessageType, new_method_call
from jeepney.io.blocking import open_dbus_connection
from jeepney.low_level import HeaderFields

NAME = "org.freedesktop.secrets"
ROOT = "/org/freedesktop/secrets"
SERVICE = DBusAddress(ROOT, bus_name=NAME, interface="org.freedesktop.Secret.Service")
PROPERTIES = DBusAddress(ROOT, bus_name=NAME, interface="org.freedesktop.DBus.Properties")
BUS = DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus")
DEFAULT = DBusAddress(ROOT + "/aliases/default", bus_name=NAME, interface="org.freedesktop.Secret.Collection")


def call(conn, addr, method, signature="", body=(), timeout=120):
    """The reply's body, or raises RuntimeError(error name)."""
    reply = conn.send_and_get_reply(new_method_call(addr, method, signature, body), timeout=timeout)
    if reply.header.message_type == MessageType.error:
        raise RuntimeError("%s: %s" % (method, reply.header.fields.get(HeaderFields.error_name, "?")))
    return reply.body


def fill(count):
    conn = open_dbus_connection(bus="SESSION")
    session = call(conn, SERVICE, "OpenSession", "sv", ("plain", ("s", "")))[1]
    window = 100
    for first in range(0, count, window):
        serials = []
        for n in range(first, min(count, first + window)):
            properties = {
                "org.freedesktop.Secret.Item.Label": ("s", "bench item %d" % n),
                "org.freedesktop.Secret.Item.Attributes": (
                    "a{ss}", {"xdg:schema": "org.example.Bench", "service": "bench-%d.example.com" % n,
                              "account": "user%d" % n}),
            }
            secret = (session, b"", ("password-%d" % n).encode(), "text/plain")
            message = new_method_call(DEFAULT, "CreateItem", "a{sv}(oayays)b", (properties, secret, False))
            serials.append(conn.send(message))
        for serial in serials:
            reply = conn.receive(timeout=120)
            while reply.header.fields.get(HeaderFields.reply_serial) is None:
                reply = conn.receive(timeout=120)  # a signal
            if reply.header.message_type == MessageType.error:
                raise RuntimeError("CreateItem: %s" % reply.header.fields.get(HeaderFields.error_name, "?"))


def owned(conn):
    return call(conn, BUS, "NameHasOwner", "s", (NAME,))[0]


def gone(pid):
    """Whether the process has exited and been reaped (or is a zombie)."""
    try:
        with open("/proc/%d/stat" % pid) as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def stop(conn):
    pid = call(conn, BUS, "GetConnectionUnixProcessID", "s", (NAME,))[0]
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while not gone(pid) or owned(conn):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            raise RuntimeError("the provider (pid %d) did not stop in 30 s" % pid)
        time.sleep(0.01)


def time_starts(rounds, buses):
    connections = [(name, open_dbus_connection(bus=address)) for name, address in buses]
    figures = {name: [] for name, _ in buses}
    for index in range(rounds + 1):  # the first round warms up (the page cache, the files of the fill's stop), uncounted
        turn = index % len(connections)
        for name, conn in connections[turn:] + connections[:turn]:
            if owned(conn):
                raise RuntimeError("%s: a provider is running before the round" % name)
            time.sleep(0.2)  # what the stop left behind (page cache writes, the bus's bookkeeping) settles
            started = time.perf_counter()
            paths = call(conn, PROPERTIES, "Get", "ss", ("org.freedesktop.Secret.Service", "Collections"))[0][1]
            if index > 0:
                figures[name].append(round((time.perf_counter() - started) * 1000, 2))
            if not paths:
                raise RuntimeError("%s: no collection" % name)
            stop(conn)
    print(json.dumps(figures))


def time_checks(path, times):
    figures = []
    for _ in range(times):
        database = sqlite3.connect("file:%s?mode=ro&immutable=1" % path, uri=True)
        started = time.perf_counter()
        result = database.execute("PRAGMA quick_check").fetchall()
        figures.append(round((time.perf_counter() - started) * 1000, 2))
        database.close()
        if result != [("ok",)]:
            raise RuntimeError("%s: quick_check says %s" % (path, result))
    print(json.dumps(figures))


if sys.argv[1] == "fill":
    fill(int(sys.argv[2]))
elif sys.argv[1] == "check":
    time_checks(sys.argv[2], int(sys.argv[3]))
elif sys.argv[1] == "time":
    time_starts(int(sys.argv[2]), [argument.split("=", 1) for argument in sys.argv[3:]])
else:
    sys.exit(__doc__)
