"""What the D-Bus clients of the tests and of `make bench` share: the Secret Service's names, a
connection, a call with a deadline that raises the D-Bus error it gets, a plain session, and the
secrets the fault tests' writers store. jeepney only, as Debian's /usr/bin/python3 has it.

A client imports what it uses (`from prelude import SERVICE, call, connect`); Python finds this
file because the directory of the script it runs comes first on sys.path."""
import hashlib

from jeepney import DBusAddress, MessageType, new_method_call
from jeepney.io.blocking import open_dbus_connection
from jeepney.low_level import HeaderFields

B = "org.freedesktop.secrets"
ROOT = "/org/freedesktop/secrets"
LOGIN = ROOT + "/collection/login"


def address(path, interface):
    return DBusAddress(path, bus_name=B, interface=interface)


SERVICE = address(ROOT, "org.freedesktop.Secret.Service")
# The login keyring's Collection interface.
COLLECTION = address(LOGIN, "org.freedesktop.Secret.Collection")
# gnome-keyring's interface for unlocking with a password, which secretd serves too.
GNOME = address(ROOT, "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface")


def connect():
    """A connection to the session bus ($DBUS_SESSION_BUS_ADDRESS)."""
    return open_dbus_connection(bus="SESSION")


def call(conn, addr, method, signature="", body=(), timeout=60):
    """The reply's body, or raises RuntimeError(error name)."""
    reply = conn.send_and_get_reply(new_method_call(addr, method, signature, body), timeout=timeout)
    if reply.header.message_type == MessageType.error:
        raise RuntimeError(reply.header.fields.get(HeaderFields.error_name, "?"))
    return reply.body


def plain_session(conn):
    """The path of a new session without encryption."""
    return call(conn, SERVICE, "OpenSession", "sv", ("plain", ("s", "")))[1]


def content(name, n):
    """The secret writer `name` stores as item `n`: 16 to 64 KiB, known from the two alone."""
    seed = hashlib.sha256(("%s-%d" % (name, n)).encode()).digest()
    return (seed * 2048)[: 16384 * (1 + n % 4)]
