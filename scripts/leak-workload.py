#!/usr/bin/python3
"""The client side of `make leaks`: N operations against the Secret Service on the session bus,
touching every code path a long-running secretd goes through: DH and plain sessions, stores,
replacements, lookups, searches, property reads and writes, deletes, lock and unlock, bad
calls answered with errors, introspection, and connections that come and go.
Prints one line of counts; exits 1 if an operation that must work failed."""
import random
import sys

import secretstorage
from jeepney import DBusAddress, new_method_call
from jeepney.io.blocking import open_dbus_connection

count = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
password = sys.stdin.readline().rstrip("\n").encode()
rng = random.Random(7)
BUS = "org.freedesktop.secrets"
LOGIN = "/org/freedesktop/secrets/collection/login"
service = DBusAddress("/org/freedesktop/secrets", bus_name=BUS, interface="org.freedesktop.Secret.Service")
gnome = DBusAddress("/org/freedesktop/secrets", bus_name=BUS,
                    interface="org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface")
counts = {}
failures = []


def call(conn, address, method, signature=None, body=()):
    reply = conn.send_and_get_reply(new_method_call(address, method, signature, body))
    return reply


class Client:
    def __init__(self):
        self.conn = secretstorage.dbus_init()
        self.collection = secretstorage.get_default_collection(self.conn)
        self.raw = open_dbus_connection(bus="SESSION")
        self.plain = call(self.raw, service, "OpenSession", "sv", ("plain", ("s", ""))).body[1]

    def close(self):
        self.conn.close()
        self.raw.close()


client = Client()
model = {}
for n in range(count):
    if n % 500 == 499:  # connections come and go; their sessions must be freed
        client.close()
        client = Client()
    key = "k%d" % rng.randrange(200)
    attributes = {"leak": "check", "key": key}
    op = rng.choice(["store", "store", "lookup", "lookup", "search", "label", "secret", "delete", "error",
                     "introspect", "getsecrets", "lock"])
    try:
        if op == "store":
            value = ("v%d-" % n).encode() * rng.randrange(1, 64)
            client.collection.create_item("label %s" % key, attributes, value, replace=True)
            model[key] = value
        elif op == "lookup":
            items = list(client.collection.search_items(attributes))
            got = items[0].get_secret() if items else None
            if got != model.get(key):
                failures.append("lookup %s" % key)
        elif op == "search":
            found = {item.get_attributes()["key"] for item in client.collection.search_items({"leak": "check"})}
            if found != set(model):
                failures.append("search")
        elif op == "label":
            for item in client.collection.search_items(attributes):
                item.set_label("relabelled %d" % n)
                item.get_label()
        elif op == "secret":
            for item in client.collection.search_items(attributes):
                value = ("s%d" % n).encode()
                item.set_secret(value)
                model[key] = value
        elif op == "delete":
            for item in client.collection.search_items(attributes):
                item.delete()
            model.pop(key, None)
        elif op == "error":  # answered with an error, never a crash or a leak
            bad = rng.choice([
                ("SearchItems", "s", ("not a dict",)),
                ("OpenSession", "sv", ("rot13", ("s", ""))),
                ("OpenSession", "sv", ("dh-ietf1024-sha256-aes128-cbc-pkcs7", ("ay", b"\x00"))),
                ("GetSecrets", "aoo", ([LOGIN + "/999999"], "/org/freedesktop/secrets/session/s999999")),
                ("Frobnicate", None, ()),
            ])
            reply = call(client.raw, service, *bad)
            if reply.header.message_type.name != "error":
                failures.append("bad call %s answered" % bad[0])
        elif op == "introspect":
            path = rng.choice(["/org/freedesktop/secrets", LOGIN, "/org/freedesktop/secrets/session", "/"])
            call(client.raw, DBusAddress(path, bus_name=BUS, interface="org.freedesktop.DBus.Introspectable"),
                 "Introspect")
        elif op == "getsecrets":
            paths = [item.item_path for item in client.collection.search_items({"leak": "check"})][:20]
            call(client.raw, service, "GetSecrets", "aoo", (paths, client.plain))
        elif op == "lock":
            call(client.raw, service, "Lock", "ao", ([LOGIN],))
            reply = call(client.raw, gnome, "UnlockWithMasterPassword", "o(oayays)",
                         (LOGIN, (client.plain, b"", password, "text/plain")))
            if reply.header.message_type.name == "error":
                failures.append("unlock: %s" % (reply.body,))
        counts[op] = counts.get(op, 0) + 1
    except Exception as error:  # noqa: BLE001 - every failure is reported
        failures.append("%s %s: %s: %s" % (op, key, type(error).__name__, error))
client.close()
print("operations: %d (%s); failures: %d %s" % (
    sum(counts.values()), ", ".join("%s %d" % item for item in sorted(counts.items())), len(failures), failures[:5]))
sys.exit(1 if failures else 0)
