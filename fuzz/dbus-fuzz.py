#!/usr/bin/python3
"""A D-Bus fuzzer for secretd: random method calls with random arguments of random types on every
object path the daemon exports, from a process of its own.

    dbus-fuzz.py --seconds 300 --password LOGIN_PASSWORD --report report.json [--seed N]

It talks to org.freedesktop.secrets on $DBUS_SESSION_BUS_ADDRESS (a private test bus: it changes
and deletes things) in three phases:

1. Seed: items with known labels, attributes, secrets and content types in the login keyring, in
   a keyring of its own ("Fuzz Seed", password "seed-password") and in the session keyring. Two
   thirds of them are *protected*: the fuzzer never sends them Item.Delete, Item.SetSecret or
   Properties.Set, and never deletes their keyrings. The others are fair game.
2. Fuzz: until the time is up, batches of calls (pipelined, without waiting between them) on the
   paths found by Introspect (service, keyrings, aliases, items, sessions, prompts) and on bogus
   ones; interfaces and methods from the introspection data or made up; arguments either of the
   method's own signature with random values (often well-formed: real session paths, secrets,
   property names) or of a random signature (every D-Bus type but fds, nested containers,
   variants, huge strings and arrays). Now and then a call is sent with NO_REPLY_EXPECTED, and a
   second connection makes calls and vanishes without reading the replies. Every call that
   expects a reply must get one (a reply or an error) within --timeout seconds. Every mutating
   call that succeeded is logged (--mutation-log) with the items it touched.
3. Verify: unlock the keyrings with their passwords; every seed item no successful call touched
   must be exactly as seeded (label, attributes, secret, content type), and the daemon must still
   answer.

The report (JSON) has the call count, the outcomes by reply or error name, the timeouts and the
verification; the exit status is 0 when every call was answered and every untouched item is
unchanged. Prompts cannot hang the run: the fuzzer never waits for a prompt's Completed signal,
and the daemon under test should have no pinentry configured (prompts then complete at once).

Only the Python standard library, jeepney and secretstorage (for the DH session arithmetic) are
used, as Debian's /usr/bin/python3 has them.
"""

import argparse
import json
import os
import random
import string
import sys
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter

from jeepney import DBusAddress, MessageType, MessageFlag, new_method_call
from jeepney.io.blocking import open_dbus_connection
from jeepney.low_level import HeaderFields
from secretstorage.dhcrypto import Session as DHSession, int_to_bytes
from secretstorage.util import format_secret

BUS_NAME = "org.freedesktop.secrets"
ROOT = "/org/freedesktop/secrets"
SERVICE = "org.freedesktop.Secret.Service"
COLLECTION = "org.freedesktop.Secret.Collection"
ITEM = "org.freedesktop.Secret.Item"
SESSION = "org.freedesktop.Secret.Session"
PROMPT = "org.freedesktop.Secret.Prompt"
GNOME = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"
GROUPS = "io.github.secretd.AccessGroups1"
PROPERTIES = "org.freedesktop.DBus.Properties"
INTROSPECTABLE = "org.freedesktop.DBus.Introspectable"
PEER = "org.freedesktop.DBus.Peer"
DH = "dh-ietf1024-sha256-aes128-cbc-pkcs7"
SEED_PASSWORD = b"seed-password"

# The standard interfaces GDBus serves on every object, with their in-signatures.
STANDARD = {
    PROPERTIES: [("Get", "ss"), ("Set", "ssv"), ("GetAll", "s")],
    INTROSPECTABLE: [("Introspect", "")],
    PEER: [("Ping", ""), ("GetMachineId", "")],
}
BASIC = "ybnqiuxtdsog"


class Timeout(Exception):
    """A call got neither a reply nor an error in time."""


# MARK: - Signatures


def split_signature(signature):
    """The complete types of a signature, in order."""
    types, index = [], 0
    while index < len(signature):
        end = complete_type_end(signature, index)
        types.append(signature[index:end])
        index = end
    return types


def complete_type_end(signature, index):
    """The index just past the complete type starting at `index`."""
    code = signature[index]
    if code == "a":
        return complete_type_end(signature, index + 1)
    if code in "({":
        closing = ")" if code == "(" else "}"
        index += 1
        while signature[index] != closing:
            index = complete_type_end(signature, index)
        return index + 1
    return index + 1


# MARK: - Random values


class Values:
    """Random D-Bus types and values, biased towards what secretd looks at."""

    def __init__(self, rng, world):
        self.rng = rng
        self.world = world
        self.huge = True  # off inside huge arrays: 100,000 huge strings would pass the bus's size limit

    def type(self, depth=0):
        roll = self.rng.random()
        if depth >= 4 or roll < 0.55:
            return self.rng.choice(BASIC)
        if roll < 0.70:
            return "a" + self.type(depth + 1)
        if roll < 0.80:
            return "a{" + self.rng.choice(BASIC) + self.type(depth + 1) + "}"
        if roll < 0.92:
            return "(" + "".join(self.type(depth + 1) for _ in range(self.rng.randint(1, 4))) + ")"
        return "v"

    def signature(self):
        return "".join(self.type() for _ in range(self.rng.randint(0, 4)))

    def string(self):
        rng = self.rng
        roll = rng.random()
        if roll < 0.002 and self.huge:
            return "x" * rng.choice([1 << 16, 1 << 20, 3 << 20])  # huge
        if roll < 0.35:
            return rng.choice(self.world.words())
        if roll < 0.45:
            return ""
        if roll < 0.6:
            return "".join(chr(rng.choice([rng.randint(0x20, 0x7E), rng.randint(0xA0, 0xD7FF), rng.randint(0xE000, 0x10FFFF)]))
                           for _ in range(rng.randint(1, 40)))
        return "".join(rng.choice(string.ascii_letters + string.digits + ":/._- ") for _ in range(rng.randint(1, 24)))

    def path(self):
        rng = self.rng
        roll = rng.random()
        if roll < 0.7 and self.world.paths:
            return rng.choice(self.world.paths + self.world.sessions + self.world.prompts)
        if roll < 0.8:
            return "/"
        return rng.choice(self.world.bogus_paths())

    def bytes(self):
        rng = self.rng
        roll = rng.random()
        if roll < 0.003 and self.huge:
            return os.urandom(rng.choice([1 << 20, 9 << 20]))  # over the 8 MiB secret limit too
        if roll < 0.2:
            return b""
        if roll < 0.4:
            return os.urandom(rng.choice([16, 128, 129]))  # IV and DH key sizes
        return os.urandom(rng.randint(1, 300))

    def value(self, signature, depth=0):
        rng = self.rng
        code = signature[0]
        if code == "y":
            return rng.randint(0, 255)
        if code == "b":
            return rng.random() < 0.5
        if code == "n":
            return rng.randint(-(1 << 15), (1 << 15) - 1)
        if code == "q":
            return rng.randint(0, (1 << 16) - 1)
        if code == "i":
            return rng.choice([0, -1, 1, rng.randint(-(1 << 31), (1 << 31) - 1)])
        if code == "u":
            return rng.choice([0, 1, (1 << 32) - 1, rng.randint(0, (1 << 32) - 1)])
        if code == "x":
            return rng.randint(-(1 << 63), (1 << 63) - 1)
        if code == "t":
            return rng.randint(0, (1 << 64) - 1)
        if code == "d":
            return rng.choice([0.0, -1.5, float("inf"), float("nan"), rng.uniform(-1e300, 1e300)])
        if code == "s":
            return self.string()
        if code == "o":
            return self.path()
        if code == "g":
            signature = self.signature()
            return signature if len(signature) < 256 else "s"
        if code == "v":
            if depth > 6:
                return ("s", "deep")
            inner = self.type(depth)
            return (inner, self.value(inner, depth + 1))
        if signature == "ay":
            return self.bytes()
        if signature == "a{ss}":
            return self.attributes()
        if signature == "a{sv}":
            return self.properties(depth)
        if signature == "(oayays)":
            return self.secret()
        if code == "a":
            element = signature[1:]
            if element[0] == "{":
                key_type, value_type = split_signature(element[1:-1])
                count = self.count(depth)
                return {self.value(key_type, depth + 1): self.value(value_type, depth + 1) for _ in range(count)}
            count = self.count(depth, element)
            huge, self.huge = self.huge, self.huge and count < 100
            try:
                return [self.value(element, depth + 1) for _ in range(count)]
            finally:
                self.huge = huge
        if code == "(":
            return tuple(self.value(field, depth + 1) for field in split_signature(signature[1:-1]))
        raise ValueError("bad signature " + signature)

    def count(self, depth, element="s"):
        roll = self.rng.random()
        if depth == 0 and roll < 0.003 and element in BASIC:
            return self.rng.choice([10_000, 100_000])  # huge
        if roll < 0.3:
            return 0
        return self.rng.randint(1, 8 if depth < 2 else 3)

    def values(self, signature):
        return tuple(self.value(part) for part in split_signature(signature))

    # Well-formed arguments, so calls reach deeper than argument checks.

    def attributes(self):
        rng = self.rng
        roll = rng.random()
        if roll < 0.25 and self.world.open_attributes:
            return dict(rng.choice(self.world.open_attributes))
        if roll < 0.35:
            return {}
        if roll < 0.38:
            return {"a%d" % n: "v" for n in range(rng.choice([257, 2000]))}  # over the limit
        attributes = {self.string()[:40]: self.string()[:80] for _ in range(rng.randint(1, 4))}
        if rng.random() < 0.2:
            attributes["keychain:access-group"] = rng.choice(["default", "com.example.other", ""])
        if rng.random() < 0.1:
            attributes["xdg:schema"] = "org.freedesktop.Secret.Generic"
        return attributes

    def properties(self, depth=0):
        rng = self.rng
        properties = {}
        if rng.random() < 0.7:
            properties[rng.choice(["org.freedesktop.Secret.Item.Label", "org.freedesktop.Secret.Collection.Label"])] = (
                ("s", self.string()) if rng.random() < 0.85 else self.value("v", depth + 1))
        if rng.random() < 0.6:
            properties["org.freedesktop.Secret.Item.Attributes"] = (
                ("a{ss}", self.attributes()) if rng.random() < 0.85 else self.value("v", depth + 1))
        for _ in range(rng.choice([0, 0, 1, 3])):
            properties[self.string()[:60]] = self.value("v", depth + 1)
        return properties

    def secret(self):
        """A `(oayays)` secret: well-formed for one of the fuzzer's sessions (encrypted for a DH
        one), or with a random session, parameters or value."""
        rng = self.rng
        roll = rng.random()
        sessions = self.world.session_keys
        content_type = rng.choice(["text/plain", "", "application/octet-stream", self.string()])
        if roll < 0.5 and sessions:
            path, key = rng.choice(list(sessions.items()))
            value = self.bytes()[: 1 << 16]
            return format_secret(key, value, content_type) if key is not None else (path, b"", value, content_type)
        if roll < 0.7 and sessions:
            return (rng.choice(list(sessions)), self.bytes(), self.bytes(), content_type)
        return (self.path(), self.bytes(), self.bytes(), content_type)


# MARK: - What the fuzzer knows about the daemon


class World:
    """Paths found by Introspect, the fuzzer's sessions and prompts, and the seed items."""

    def __init__(self):
        self.paths = [ROOT]
        self.methods = {}  # interface -> [(method, in-signature)], from every path
        self.interfaces = {}  # path -> [(interface, [(method, signature)], [(property, type, access)])]
        self.sessions = []
        self.session_keys = {}  # session path -> DHSession or None (plain)
        self.prompts = []
        self.open_attributes = []
        self.collections = []
        self.aliases = []

    def words(self):
        return [
            "plain", DH, "rot13", "default", "session", "login", "Label", "Attributes", "Items", "Locked", "Type",
            "Created", "Modified", "Collections", SERVICE, COLLECTION, ITEM, SESSION, PROMPT, GNOME, GROUPS,
            "org.freedesktop.Secret.Item.Label", "org.freedesktop.Secret.Item.Attributes",
            "org.freedesktop.Secret.Collection.Label", "com.example.group", "default", "exe:/usr/bin/true",
            "unit:x.service", "flatpak:org.example.App", "snap:x", "exe:relative", "text/plain", "window-id",
        ]

    def bogus_paths(self):
        return [
            "/org", "/org/freedesktop", ROOT + "/collection", ROOT + "/collection/nothing",
            ROOT + "/collection/login/0", ROOT + "/collection/login/999999999", ROOT + "/collection/login/x",
            ROOT + "/collection/login/9223372036854775808", ROOT + "/collection/login/1/2",
            ROOT + "/aliases", ROOT + "/aliases/nothing", ROOT + "/aliases/default/1", ROOT + "/session",
            ROOT + "/session/s0", ROOT + "/session/s99999999999999999999", ROOT + "/session/x1",
            ROOT + "/prompt", ROOT + "/prompt/p0", ROOT + "/prompt/p1", ROOT + "/prompt/p_1",
            "/org/gnome/keyring/InternalUnsupportedGuiltRiddenInterface", "/a/b/c",
        ]


# MARK: - The connection


class Client:
    """One bus connection: single calls and pipelined batches with a deadline."""

    def __init__(self):
        self.connection = open_dbus_connection(bus="SESSION")
        self.unique_name = self.connection.unique_name

    def close(self):
        self.connection.close()

    def send(self, message):
        serial = next(self.connection.outgoing_serial)
        self.connection.send(message, serial=serial)
        return serial

    def replies(self, serials, timeout):
        """Waits for the replies to `serials`; returns {serial: message}; raises Timeout."""
        waiting = set(serials)
        found = {}
        deadline = time.monotonic() + timeout
        while waiting:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout("%d of %d calls unanswered after %s s" % (len(waiting), len(serials), timeout))
            try:
                message = self.connection.receive(timeout=remaining)
            except TimeoutError:
                continue
            serial = message.header.fields.get(HeaderFields.reply_serial)
            if serial in waiting:
                waiting.discard(serial)
                found[serial] = message
        return found

    def call(self, path, interface, method, signature="", body=(), timeout=30):
        address = DBusAddress(path, bus_name=BUS_NAME, interface=interface)
        message = new_method_call(address, method, signature, body)
        serial = self.send(message)
        return self.replies([serial], timeout)[serial]

    def ok(self, path, interface, method, signature="", body=(), timeout=30):
        reply = self.call(path, interface, method, signature, body, timeout)
        if reply.header.message_type == MessageType.error:
            raise RuntimeError("%s.%s on %s: %s %s" % (interface, method, path, error_name(reply), reply.body))
        return reply.body


def error_name(message):
    return message.header.fields.get(HeaderFields.error_name, "?")


# MARK: - The fuzzer


class Fuzzer:
    def __init__(self, options):
        self.options = options
        self.rng = random.Random(options.seed)
        self.world = World()
        self.values = Values(self.rng, self.world)
        self.client = Client()
        self.outcomes = Counter()
        self.by_method = Counter()
        self.calls = 0
        self.no_reply_sent = 0
        self.abandoned = 0
        self.timeouts = []
        self.touched = set()
        self.deleted_collections = set()
        self.mutations = 0
        self.mutation_log = open(options.mutation_log, "w") if options.mutation_log else None
        self.trace = open(options.trace, "w") if options.trace else None
        self.seeds = []  # dicts: path, collection, label, attributes, secret, content_type, protected
        self.protected_items = set()
        self.protected_collections = set()
        self.passwords = {}  # collection path -> password bytes
        self.plain_session = None
        self.fatal_batch = None  # the calls in flight when the daemon died
        self.dh_keys = {}  # public key bytes -> DHSession, until OpenSession answers

    # MARK: Seeding

    def seed(self):
        client = self.client
        self.plain_session = client.ok(ROOT, SERVICE, "OpenSession", "sv", ("plain", ("s", "")))[1]
        login = ROOT + "/collection/login"
        self.passwords[login] = self.options.password.encode()
        seed_collection = client.ok(ROOT, GNOME, "CreateWithMasterPassword", "a{sv}(oayays)", (
            {"org.freedesktop.Secret.Collection.Label": ("s", "Fuzz Seed")},
            (self.plain_session, b"", SEED_PASSWORD, "text/plain")), timeout=60)[0]
        self.passwords[seed_collection] = SEED_PASSWORD
        session_collection = client.ok(ROOT, SERVICE, "ReadAlias", "s", ("session",))[0]
        self.protected_collections = {login, seed_collection, session_collection}
        for collection, count in [(login, 24), (seed_collection, 12), (session_collection, 6)]:
            for index in range(count):
                protected = index % 3 != 0
                attributes = {"fuzz-seed": "%s-%d" % (collection.rsplit("/", 1)[1], index),
                              "kind": self.rng.choice(["web", "mail", "ssh", "ünïcode ✓"]), "n": str(index)}
                label = "seed %d %s" % (index, "✓" * (index % 4))
                secret = os.urandom(self.rng.choice([1, 16, 100, 4096, 65536])) if index % 2 else ("pw-%d\0tail" % index).encode()
                content_type = self.rng.choice(["text/plain", "application/octet-stream"])
                path = client.ok(collection, COLLECTION, "CreateItem", "a{sv}(oayays)b", (
                    {"org.freedesktop.Secret.Item.Label": ("s", label),
                     "org.freedesktop.Secret.Item.Attributes": ("a{ss}", attributes)},
                    (self.plain_session, b"", secret, content_type), False))[0]
                self.seeds.append({"path": path, "collection": collection, "label": label, "attributes": attributes,
                                   "secret": secret, "content_type": content_type, "protected": protected})
                if protected:
                    self.protected_items.add(path)
                else:
                    self.world.open_attributes.append(attributes)
        self.world.sessions.append(self.plain_session)
        self.world.session_keys[self.plain_session] = None
        self.discover()

    # MARK: Discovery

    def discover(self):
        """Walks the object tree with Introspect from the service path."""
        paths, interfaces = [], {}
        queue = [ROOT]
        while queue and len(paths) < 2000:
            path = queue.pop()
            try:
                reply = self.client.call(path, INTROSPECTABLE, "Introspect", timeout=self.options.timeout)
            except Timeout as timeout:
                self.timeout("Introspect " + path, timeout)
                return
            if reply.header.message_type == MessageType.error:
                continue
            tree = ElementTree.fromstring(reply.body[0])
            found = []
            for interface in tree.findall("interface"):
                name = interface.get("name")
                methods = [(method.get("name"), "".join(arg.get("type") for arg in method.findall("arg")
                                                        if arg.get("direction", "in") == "in"))
                           for method in interface.findall("method")]
                properties = [(p.get("name"), p.get("type"), p.get("access")) for p in interface.findall("property")]
                found.append((name, methods, properties))
            if found:
                paths.append(path)
                interfaces[path] = found
            for node in tree.findall("node"):
                child = node.get("name")
                if child:
                    queue.append(path.rstrip("/") + "/" + child)
        self.world.paths = paths
        self.world.interfaces = interfaces
        for entries in interfaces.values():
            for name, methods, _ in entries:
                self.world.methods[name] = methods
        self.world.prompts = [p for p in paths if p.startswith(ROOT + "/prompt/")][-50:]
        self.world.collections = [p for p in paths if p.count("/") == 5 and "/collection/" in p]
        self.world.aliases = [p for p in paths if p.startswith(ROOT + "/aliases/")]

    # MARK: Making calls

    def random_call(self):
        """(path, interface, method, signature, body) for one random call."""
        rng, world = self.rng, self.world
        path = rng.choice(world.paths) if world.paths and rng.random() < 0.85 else self.values.path()
        known = world.interfaces.get(path, [])
        roll = rng.random()
        if known and roll < 0.75:
            interface = rng.choice(known)[0]
        elif roll < 0.9:
            interface = rng.choice(list(STANDARD) + [SERVICE, COLLECTION, ITEM, SESSION, PROMPT, GNOME, GROUPS])
        else:
            interface = rng.choice(["org.example.Nothing", "org.freedesktop.Secret.Nothing", SERVICE + "X", "a.b"])
        methods = STANDARD.get(interface) or world.methods.get(interface, [])
        if methods and rng.random() < 0.92:
            method, signature = rng.choice(methods)
        else:
            method = rng.choice(["Frobnicate", "Get", "Delete", "Unlock", "Prompt", "X" * 255, "Close", "OpenSession"])
            signature = self.values.signature()
        if rng.random() < 0.2:
            signature = self.values.signature()  # the wrong signature on purpose
        body = self.arguments(path, interface, method, signature, known)
        return path, interface, method, signature, body

    def arguments(self, path, interface, method, signature, known):
        rng = self.rng
        if interface == PROPERTIES and signature in ("ss", "ssv", "s") and rng.random() < 0.8:
            names = [entry[0] for entry in known] or [ITEM]
            owner = rng.choice(names + [ITEM, COLLECTION, SERVICE])
            props = next((entry[2] for entry in known if entry[0] == owner), [])
            name = rng.choice([p[0] for p in props] or ["Label"]) if rng.random() < 0.85 else self.values.string()
            if signature == "s":
                return (owner,)
            if signature == "ss":
                return (owner, name)
            kind = next((p[1] for p in props if p[0] == name), "s")
            value = (kind, self.values.value(kind)) if rng.random() < 0.8 else self.values.value("v")
            return (owner, name, value)
        if interface == SERVICE and method == "OpenSession" and signature == "sv" and rng.random() < 0.7:
            if rng.random() < 0.5:
                return ("plain", ("s", "") if rng.random() < 0.8 else self.values.value("v"))
            if rng.random() < 0.6:
                key = DHSession()
                public = int_to_bytes(key.my_public_key)
                self.dh_keys[public] = key
            else:
                public = rng.choice([b"", b"\x00", b"\x01", b"\xff" * 128, os.urandom(128), os.urandom(300)])
            return (DH, ("ay", public) if rng.random() < 0.9 else self.values.value("v"))
        return self.values.values(signature)

    def forbidden(self, path, interface, method, signature, body):
        """Whether the call could change a protected item (never sent: the invariant is theirs)."""
        if path in self.protected_items:
            if interface == ITEM and method in ("Delete", "SetSecret"):
                return True
            if interface == PROPERTIES and method == "Set":
                return True
        if interface == COLLECTION and method == "Delete":
            if path in self.protected_collections or "/aliases/" in path:
                return True  # aliases can point at any keyring
        if interface == COLLECTION and method == "CreateItem" and signature == "a{sv}(oayays)b" and body[2]:
            attributes = body[0].get("org.freedesktop.Secret.Item.Attributes")
            if isinstance(attributes, tuple) and attributes[0] == "a{ss}":
                if any(seed["attributes"] == attributes[1] for seed in self.seeds if seed["protected"]):
                    return True
        if interface == GNOME and method == "ChangeWithMasterPassword" and body and isinstance(body[0], str) \
                and body[0] in self.passwords:
            return True  # the verification needs to unlock the seed keyrings
        return False

    def guarded(self, step):
        """Runs one step of the run; a connection the bus closed (it refuses malformed messages
        that way) is counted and opened again."""
        try:
            step()
        except (ConnectionError, EOFError) as error:
            self.outcomes["(connection closed by the bus)"] += 1
            if self.trace:
                self.trace.write("-- connection closed: %s\n" % error)
            self.client = Client()

    def send_batch(self):
        """Sends 1–32 random calls back to back, then collects the replies."""
        pending = []
        for _ in range(self.rng.randint(1, 32)):
            path, interface, method, signature, body = self.random_call()
            if self.forbidden(path, interface, method, signature, body):
                continue
            address = DBusAddress(path, bus_name=BUS_NAME, interface=interface)
            try:
                message = new_method_call(address, method, signature, body)
            except Exception:
                self.outcomes["(not sendable by jeepney)"] += 1
                continue
            mutating = self.is_mutating(interface, method)
            if not mutating and self.rng.random() < 0.03:
                message.header.flags |= MessageFlag.no_reply_expected
                if self.trace:
                    self.trace.write("- %s %s.%s (%s) %s\n" % (path, interface, method, signature, repr(body)[:300]))
                try:
                    self.client.send(message)
                except ValueError:
                    continue
                self.no_reply_sent += 1
                self.calls += 1
                continue
            try:
                serial = self.client.send(message)
            except (ValueError, TypeError, OverflowError, KeyError, IndexError):
                self.outcomes["(not sendable by jeepney)"] += 1
                continue
            pending.append((serial, path, interface, method, signature, body))
            if self.trace:
                self.trace.write("%d %s %s.%s (%s) %s\n" % (serial, path, interface, method, signature, repr(body)[:300]))
            self.calls += 1
        if self.trace:
            self.trace.flush()
        if not pending:
            return
        try:
            replies = self.client.replies([entry[0] for entry in pending], self.options.timeout)
        except Timeout as timeout:
            self.timeout("batch of %d: %s" % (len(pending), ", ".join("%s.%s" % (e[2], e[3]) for e in pending[:5])), timeout)
            self.client.close()
            self.client = Client()
            return
        for serial, path, interface, method, signature, body in pending:
            reply = replies[serial]
            key = "%s.%s" % (interface.rsplit(".", 1)[-1], method[:40])
            if reply.header.message_type == MessageType.error:
                outcome = error_name(reply)
            else:
                outcome = "reply"
                self.learn(path, interface, method, signature, body, reply.body)
            self.outcomes[outcome] += 1
            self.by_method[key + " -> " + outcome] += 1
        lost = {"org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.ServiceUnknown"}
        if any(error_name(message) in lost for message in replies.values()) and not self.alive():
            # The daemon died on one of these calls (or on an unanswered one sent just before).
            self.fatal_batch = ["%s %s.%s (%s) %s" % (path, interface, method, signature, repr(body)[:500])
                                for _, path, interface, method, signature, body in pending]

    @staticmethod
    def is_mutating(interface, method):
        return (interface, method) in {
            (ITEM, "Delete"), (ITEM, "SetSecret"), (PROPERTIES, "Set"), (COLLECTION, "CreateItem"),
            (COLLECTION, "Delete"), (SERVICE, "Lock"), (SERVICE, "Unlock"), (SERVICE, "SetAlias"),
            (SERVICE, "CreateCollection"), (GNOME, "ChangeWithMasterPassword"), (GNOME, "CreateWithMasterPassword"),
            (GNOME, "UnlockWithMasterPassword"), (GNOME, "ChangeWithPrompt"), (GROUPS, "AddMember"),
            (GROUPS, "RemoveMember"), (SESSION, "Close"), (PROMPT, "Prompt"), (PROMPT, "Dismiss"),
        }

    def learn(self, path, interface, method, signature, body, reply):
        """Records a successful call: sessions and prompts to reuse, and what it changed."""
        if interface == SERVICE and method == "OpenSession" and signature == "sv":
            session = reply[1]
            self.world.sessions = (self.world.sessions + [session])[-40:]
            if body[0] == "plain":
                self.world.session_keys[session] = None
            elif body[1][0] == "ay" and body[1][1] in self.dh_keys and reply[0][0] == "ay":
                key = self.dh_keys.pop(body[1][1])
                key.set_server_public_key(int.from_bytes(reply[0][1], "big"))
                key.object_path = session
                self.world.session_keys[session] = key
            if len(self.world.session_keys) > 40:
                for old in list(self.world.session_keys)[:-40]:
                    if old != self.plain_session:
                        del self.world.session_keys[old]
        for value in reply if isinstance(reply, tuple) else ():
            if isinstance(value, str) and value.startswith(ROOT + "/prompt/"):
                self.world.prompts = (self.world.prompts + [value])[-50:]
        if not self.is_mutating(interface, method):
            return
        touched = []
        if interface == ITEM or (interface == PROPERTIES and body and body[0] == ITEM):
            touched = [path]
        elif interface == COLLECTION and method == "CreateItem" and reply[0] != "/":
            touched = [reply[0]]
        elif interface == COLLECTION and method == "Delete":
            self.deleted_collections.add(path)
        self.touched.update(touched)
        self.mutations += 1
        if self.mutation_log:
            summary = [repr(value)[:120] for value in body]
            self.mutation_log.write(json.dumps({"call": "%s.%s" % (interface, method), "path": path, "args": summary,
                                                "touched": touched}) + "\n")

    def timeout(self, what, error):
        self.timeouts.append("%s: %s" % (what, error))
        self.outcomes["(timeout)"] += 1

    # MARK: Side shows

    def vanishing_client(self):
        """A second connection that opens sessions and prompts, sends calls, and disconnects
        without reading a single reply."""
        other = Client()
        try:
            for _ in range(self.rng.randint(1, 40)):
                choice = self.rng.random()
                if choice < 0.4:
                    message = new_method_call(DBusAddress(ROOT, BUS_NAME, SERVICE), "OpenSession", "sv", ("plain", ("s", "")))
                elif choice < 0.6:
                    message = new_method_call(DBusAddress(ROOT, BUS_NAME, SERVICE), "Unlock", "ao",
                                              (self.world.collections or [ROOT],))
                elif choice < 0.7:
                    message = new_method_call(DBusAddress(ROOT, BUS_NAME, SERVICE), "CreateCollection", "a{sv}s",
                                              ({}, "fuzz-%d" % self.rng.randint(0, 3)))
                else:
                    path = self.rng.choice(self.world.paths or [ROOT])
                    message = new_method_call(DBusAddress(path, BUS_NAME, INTROSPECTABLE), "Introspect")
                other.send(message)
                self.abandoned += 1
        finally:
            other.close()

    def keep_unlocked(self):
        for collection, password in self.passwords.items():
            if collection not in self.deleted_collections:
                self.client.send(new_method_call(DBusAddress(ROOT, BUS_NAME, GNOME), "UnlockWithMasterPassword",
                                                 "o(oayays)", (collection, (self.plain_session, b"", password, "text/plain"))))

    # MARK: The run

    def fuzz(self):
        started = time.monotonic()
        end = started + self.options.seconds
        next_discovery = next_unlock = next_report = next_vanish = started
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_discovery:
                self.guarded(self.discover)
                next_discovery = now + 3
            if now >= next_unlock:
                self.guarded(self.keep_unlocked)  # the replies are read (and dropped) with the next batch
                next_unlock = now + 5
            if now >= next_vanish:
                self.guarded(self.vanishing_client)
                next_vanish = now + 2
            if now >= next_report:
                print("dbus-fuzz: %4.0f s: %d calls, %d timeouts, %d mutations" % (
                    now - started, self.calls, len(self.timeouts), self.mutations), file=sys.stderr, flush=True)
                next_report = now + 10
            self.guarded(self.send_batch)
            if self.fatal_batch:
                print("dbus-fuzz: the daemon died during these calls:\n  " + "\n  ".join(self.fatal_batch),
                      file=sys.stderr, flush=True)
                break
            if len(self.timeouts) >= 3 and not self.alive():
                print("dbus-fuzz: the daemon is gone", file=sys.stderr, flush=True)
                break

    def alive(self):
        """Whether the daemon answers, allowing it a few seconds to reconnect to the bus (it does
        when GDBus drops its connection over a message it cannot decode)."""
        for _ in range(20):
            if self.answers():
                return True
            time.sleep(0.5)
        return False

    def answers(self):
        try:
            client = Client()
            try:
                owner = client.connection.send_and_get_reply(new_method_call(
                    DBusAddress("/org/freedesktop/DBus", "org.freedesktop.DBus", "org.freedesktop.DBus"),
                    "NameHasOwner", "s", (BUS_NAME,)), timeout=10).body[0]
                if not owner:
                    return False
                return client.call(ROOT, PEER, "Ping", timeout=self.options.timeout).header.message_type != MessageType.error
            finally:
                client.close()
        except Exception:
            return False

    # MARK: Verification

    def verify(self):
        """Every seed item that no successful call touched is exactly as seeded."""
        client = Client()
        session = client.ok(ROOT, SERVICE, "OpenSession", "sv", ("plain", ("s", "")))[1]
        for collection, password in self.passwords.items():
            if collection in self.deleted_collections:
                continue
            deadline = time.monotonic() + 75  # wrong passwords make the next attempt wait up to 60 s
            while True:
                reply = client.call(ROOT, GNOME, "UnlockWithMasterPassword", "o(oayays)",
                                    (collection, (session, b"", password, "text/plain")), timeout=60)
                if reply.header.message_type != MessageType.error:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("cannot unlock %s: %s %s" % (collection, error_name(reply), reply.body))
                time.sleep(1)
        checked = unchanged = skipped = 0
        problems = []
        for seed in self.seeds:
            path = seed["path"]
            if path in self.touched or seed["collection"] in self.deleted_collections:
                if seed["protected"]:
                    problems.append("%s: protected, yet a successful call touched it" % path)
                skipped += 1
                continue
            checked += 1
            found = {}
            reply = client.call(path, ITEM, "GetSecret", "o", (session,))
            if reply.header.message_type == MessageType.error:
                problems.append("%s: GetSecret failed: %s %s" % (path, error_name(reply), reply.body))
                continue
            _, parameters, secret, content_type = reply.body[0]
            found["secret"], found["content_type"] = secret, content_type
            for name in ("Label", "Attributes"):
                reply = client.call(path, PROPERTIES, "Get", "ss", (ITEM, name))
                found[name] = reply.body[0][1] if reply.header.message_type != MessageType.error else error_name(reply)
            expected = {"secret": seed["secret"], "content_type": seed["content_type"], "Label": seed["label"],
                        "Attributes": seed["attributes"]}
            differences = [key for key in expected if expected[key] != found[key]]
            if differences:
                problems.append("%s changed: %s" % (path, ", ".join(
                    "%s %r -> %r" % (key, str(expected[key])[:60], str(found[key])[:60]) for key in differences)))
            else:
                unchanged += 1
        client.close()
        return {"seed_items": len(self.seeds), "checked": checked, "unchanged": unchanged,
                "touched_by_calls": skipped, "problems": problems}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--password", required=True, help="the login keyring's password")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: time)")
    parser.add_argument("--timeout", type=float, default=30, help="seconds a call may take to be answered")
    parser.add_argument("--report", help="where the JSON report goes (default: standard output)")
    parser.add_argument("--mutation-log", help="where the successful mutating calls are logged (JSON lines)")
    parser.add_argument("--trace", help="where every call is written before it is sent (to find the one that hurt)")
    options = parser.parse_args()
    if options.seed is None:
        options.seed = int(time.time())
    fuzzer = Fuzzer(options)
    fuzzer.seed()
    started = time.monotonic()
    fuzzer.fuzz()
    duration = time.monotonic() - started
    alive = fuzzer.alive()
    verification = fuzzer.verify() if alive else {"problems": ["the daemon does not answer any more"]}
    report = {
        "seed": options.seed, "seconds": round(duration, 1), "calls": fuzzer.calls,
        "calls_per_second": round(fuzzer.calls / max(duration, 0.001)),
        "answered": sum(count for outcome, count in fuzzer.outcomes.items() if not outcome.startswith("(")),
        "no_reply_expected_sent": fuzzer.no_reply_sent, "abandoned_by_vanishing_clients": fuzzer.abandoned,
        "outcomes": dict(fuzzer.outcomes.most_common()), "timeouts": fuzzer.timeouts[:20],
        "successful_mutations": fuzzer.mutations, "items_touched": len(fuzzer.touched),
        "collections_deleted": sorted(fuzzer.deleted_collections), "daemon_alive": alive,
        "calls_in_flight_when_the_daemon_died": fuzzer.fatal_batch,
        "verification": verification, "by_method": dict(fuzzer.by_method.most_common(60)),
    }
    text = json.dumps(report, indent=1, ensure_ascii=False)
    if options.report:
        with open(options.report, "w") as output:
            output.write(text)
    else:
        print(text)
    ok = alive and not fuzzer.timeouts and not verification["problems"]
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
