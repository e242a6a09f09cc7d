#!/usr/bin/python3
"""Create REAL gnome-keyring keyring files (with the real gnome-keyring-daemon) as importer test input.

Usage: make-gnome-keyrings.py OUTDIR MANIFEST.json

A private dbus-daemon and `gnome-keyring-daemon --foreground --components=secrets --unlock`, with
HOME/XDG_* in a temp dir (the user's keyrings are never touched), create through D-Bus the keyrings
"login", "work" (binary format) and "open" (empty password: plain-text GKeyFile); master passwords go
through org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface, so no prompter is needed. A second
daemon loads the files; its D-Bus read-back is MANIFEST.json, the result an importer must reproduce.
Integer attributes: gnome-keyring writes NAME as type 1 (uint32) when the item also has the attribute
"gkr:compat:uint32:NAME" (any value) and NAME's value passes strtoul(…, 10) with nothing left over
(gkm-secret-fields.c). Needs only the standard library and python3-jeepney (Debian 12: gkr 42.1).
"""
import base64, hashlib, json, os, shutil, signal, struct, subprocess, sys, tempfile, time
from fixture_daemons import Daemons
from jeepney import DBusAddress, new_method_call
from jeepney.io.blocking import open_dbus_connection
from jeepney.wrappers import DBusErrorResponse, unwrap_msg

DEADLINE, CALL_TIMEOUT = 60, 20  # seconds for the whole run (SIGALRM) and for one D-Bus call
SVC, ROOT, S = "org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret."
INTERNAL = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"
MAGIC = b"GnomeKeyring\n\r\0\n"
U32 = "gkr:compat:uint32:"  # marker attribute; gnome-keyring keeps it and returns it in Attributes
GENERIC = "org.freedesktop.Secret.Generic"
ITEM_TYPES = {"org.gnome.keyring.NetworkPassword": 1, "org.gnome.keyring.Note": 2}  # others: 0

# name -> (password, label, items); an item is (label, attributes, secret). Item ids are 1, 2, ...
# in this order. "login" itself is created by --unlock (its label "Login" is gnome-keyring's).
SPEC = {
    "login": ("login-pw", "Login", [
        ("Пароль 🔑", {"service": "тест-сервис", "user": "ünïcødé 😀"}, "sécret ✓".encode()),
        ("Big binary secret", {"kind": "1MiB"}, bytes(i % 256 for i in range(1 << 20))),
        ("IMAP account", {"xdg:schema": "org.gnome.keyring.NetworkPassword", "server": "mail.example.org",
                          "protocol": "imap", "user": "alice", "port": "993"}, b"imap-pw"),
        ("Many attributes", {"a": "1", "b": "two words", "empty": "", "eq=sign": "x=y", "colon:name": "c",
                             "url": "https://example.org/?q=1&r=2", "multi\nline": "v\tw"}, b"many"),
        ("Integer attributes", {"port": "8080", U32 + "port": "", "big": "4294967295", U32 + "big": "",
                                "as-string": "42"}, b"int-secret"),
        ("Empty secret", {"note": "secret is empty"}, b""),
        ("Custom schema", {"xdg:schema": "org.example.Custom", "k": "v"}, b"custom"),
    ]),
    "work": ("work-pw", "work", [
        ("Work VPN", {"service": "vpn", "user": "bob"}, b"vpn-secret"),
        ("Work note", {"xdg:schema": "org.gnome.keyring.Note"}, "note ✓\nsecond line".encode()),
    ]),
    "open": ("", "open", [  # no newline in a secret here: 42.1 writes it raw and can't reload the file
        ("Open text", {"service": "open", "user": "carol"}, "plain ✓".encode()),
        ("Open binary", {"service": "open-bin"}, b"\xff\x00\x01\x80bin"),
        ("Open integer", {"port": "22", U32 + "port": ""}, b"ssh"),
    ]),
}
NOTES = [  # for the manifest's readers
    "Read back through D-Bus from a fresh gnome-keyring-daemon that loaded these files.",
    f"Items stored without xdg:schema read back with xdg:schema={GENERIC} (item type 0).",
    "A uint32 attribute NAME reads back as a decimal string plus gkr:compat:uint32:NAME=''.",
    "binary_header ctime_field/mtime_field: header fields in docs/file-format.txt order; gkr 42.1 "
    "writes modified first but reads ctime first (swaps them on every save+load); a keyring's "
    "created/modified here are what it reports: ctime_field/mtime_field.",
    "Hashed attribute values: uint32 x -> 0x18273645 ^ x ^ rot16(x); string -> md5 hex.",
    "content_type is always text/plain: gnome-keyring stores none.",
]
daemons = Daemons("make-gnome-keyrings")  # the processes started; daemons.stop_all() ends them, newest first
procs, die, stop, stop_all, start_bus = daemons.procs, daemons.die, Daemons.stop, daemons.stop_all, daemons.start_bus

def start_keyring(tmp, env, addr, login_pw, tag):
    """gnome-keyring-daemon; with login_pw, --unlock and the password on stdin (no newline)."""
    log = f"{tmp}/gkd-{tag}.log"
    args = ["gnome-keyring-daemon", "--foreground", "--components=secrets",
            "--control-directory=" + env["XDG_RUNTIME_DIR"] + "/keyring"] + (["--unlock"] if login_pw else [])
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                         env=dict(env, DBUS_SESSION_BUS_ADDRESS=addr))
    procs.append(p)
    p.stdin.write((login_pw or "").encode())
    p.stdin.close()
    conn = open_dbus_connection(bus=addr)
    bus = DBusAddress("/org/freedesktop/DBus", "org.freedesktop.DBus", "org.freedesktop.DBus")
    for _ in range(200):  # up to 20 s for the name to appear
        if p.poll() is not None:
            die(f"gnome-keyring-daemon exited with {p.returncode}:\n" + open(log).read())
        if call(conn, bus, "NameHasOwner", "s", SVC)[0]:
            session = call(conn, ROOT, "OpenSession", "sv", "plain", ("s", ""), iface=S + "Service")[1]
            return p, conn, session, log
        time.sleep(0.1)
    die(SVC + " did not appear on the bus:\n" + open(log).read())

def call(conn, obj, method, sig=None, *args, iface=None):
    if isinstance(obj, str):
        obj = DBusAddress(obj, SVC, iface)
    msg = new_method_call(obj if iface is None else obj.with_interface(iface), method, sig, args)
    return unwrap_msg(conn.send_and_get_reply(msg, timeout=CALL_TIMEOUT))

def get_all(conn, path, iface):
    props = call(conn, path, "GetAll", "s", iface, iface="org.freedesktop.DBus.Properties")[0]
    return {k: v[1] for k, v in props.items()}  # drop the variants' signatures

def create(conn, session):
    """Creates work/open with their master passwords, the items of all three, the default alias."""
    for name, (pw, label, items) in SPEC.items():
        path = f"{ROOT}/collection/{name}"
        if name != "login":
            got = call(conn, ROOT, "CreateWithMasterPassword", "a{sv}(oayays)", {S + "Collection.Label": ("s", label)},
                       (session, b"", pw.encode(), "text/plain"), iface=INTERNAL)[0]
            if got != path:
                die(f"keyring {name} got the path {got}")
        for n, (ilabel, attrs, secret) in enumerate(items):
            if (name, n) == ("login", 0):  # renamed to ilabel at the end, so Modified > Created
                ilabel += " (before rename)"
            props = {S + "Item.Label": ("s", ilabel), S + "Item.Attributes": ("a{ss}", attrs)}
            prompt = call(conn, path, "CreateItem", "a{sv}(oayays)b", props, (session, b"", secret, "text/plain"),
                          False, iface=S + "Collection")[1]
            if prompt != "/":
                die(f"CreateItem {ilabel!r} wants a prompt: keyring {name} is locked?")
        time.sleep(1.1)  # each keyring's items get other created/modified times
    # (Setting the same label again would not change Modified.)
    call(conn, ROOT + "/collection/login/1", "Set", "ssv", S + "Item", "Label", ("s", SPEC["login"][2][0][0]),
         iface="org.freedesktop.DBus.Properties")
    call(conn, ROOT, "SetAlias", "so", "default", ROOT + "/collection/login", iface=S + "Service")

def read_back(conn, session):
    """Everything the daemon reports, keyed by keyring name (the collection path's last element)."""
    out = {}
    for path in get_all(conn, ROOT, S + "Service")["Collections"]:
        name = path.rsplit("/", 1)[1]
        if name == "session":  # gnome-keyring's transient collection, never a file
            continue
        c = get_all(conn, path, S + "Collection")
        if c["Locked"]:
            die(f"keyring {name} is still locked")
        items = []
        for ipath in sorted(c["Items"], key=lambda p: int(p.rsplit("/", 1)[1])):
            i = get_all(conn, ipath, S + "Item")
            sec = call(conn, ipath, "GetSecret", "o", session, iface=S + "Item")[0]
            items.append({"id": int(ipath.rsplit("/", 1)[1]), "label": i["Label"],
                          "attributes": dict(sorted(i["Attributes"].items())), "type": i["Type"],
                          "secret": base64.b64encode(sec[2]).decode(), "content_type": sec[3],
                          "created": i["Created"], "modified": i["Modified"]})
        out[name] = {"label": c["Label"], "created": c["Created"], "modified": c["Modified"], "items": items}
    return out

def check_against_spec(got, when):
    """Labels, attributes and secrets must be as stored, except for the Generic xdg:schema that
    gnome-keyring adds (once it has reloaded the file) to items stored without a schema."""
    for name, (pw, label, items) in SPEC.items():
        k = got.get(name) or die(f"{when}: keyring {name} is missing")
        if k["label"] != label or [i["id"] for i in k["items"]] != list(range(1, len(items) + 1)):
            die(f"{when}: keyring {name}: label {k['label']!r}, items {[i['id'] for i in k['items']]}")
        for (ilabel, attrs, secret), have in zip(items, k["items"]):
            a = dict(have["attributes"])
            if "xdg:schema" not in attrs and a.get("xdg:schema") == GENERIC:
                del a["xdg:schema"]
            if (have["label"], a, have["secret"]) != (ilabel, attrs, base64.b64encode(secret).decode()):
                die(f"{when}: {name}: item {ilabel!r} {attrs} read back as {have['label']!r} {a}")

def parse_binary(data):
    """The unencrypted part of a binary keyring (docs/file-format.txt): header and hashed items."""
    pos = 20  # magic, major, minor, crypto (0 = AES), hash (0 = MD5)

    def u32(n=1):
        nonlocal pos
        pos += 4 * n
        return struct.unpack(f">{n}I", data[pos - 4 * n:pos])

    def string():
        nonlocal pos
        n, = u32()
        pos += 0 if n == 0xFFFFFFFF else n
        return None if n == 0xFFFFFFFF else data[pos - n:pos].decode()

    if data[:16] != MAGIC:
        die("binary keyring without the magic")
    h = {"version": list(data[16:20]), "label": string()}
    t = u32(4)
    h["ctime_field"], h["mtime_field"] = t[0] << 32 | t[1], t[2] << 32 | t[3]
    h["flags"], h["lock_timeout"], h["hash_iterations"] = u32(3)
    h["salt_hex"], pos = data[pos:pos + 8].hex(), pos + 8 + 16  # salt, 4 reserved uint32
    h["hashed_items"] = []
    for _ in range(u32()[0]):
        iid, itype, n = u32(3)
        attrs = []
        for _ in range(n):  # name, type, then a uint32 (type 1) or a string
            attrs.append({"name": string(), "type": u32()[0]})
            attrs[-1]["value"] = u32()[0] if attrs[-1]["type"] == 1 else string()
        h["hashed_items"].append({"id": iid, "type": itype, "attributes": attrs})
    h["encrypted_size"], = u32()
    if pos + h["encrypted_size"] != len(data) or h["encrypted_size"] % 16:
        die("binary keyring: the encrypted block's size does not match the file")
    return h

def check_hashed(name, header):
    """Hashed attributes: NAME is type 1 (uint32 hash) exactly when the item has gkr:compat:uint32:NAME."""
    items = dict(enumerate(SPEC[name][2], 1))
    for h in header["hashed_items"]:
        attrs = items[h["id"]][1]
        if h["type"] != ITEM_TYPES.get(attrs.get("xdg:schema"), 0):
            die(f"{name}.keyring: hashed item {h['id']} has the item type {h['type']}")
        if sorted(a["name"] for a in h["attributes"]) != sorted(k for k in attrs if not k.startswith(U32)):
            die(f"{name}.keyring: hashed item {h['id']} has the attributes {h['attributes']}")
        for a in h["attributes"]:
            v = attrs[a["name"]]
            x = int(v) if U32 + a["name"] in attrs else None
            want = (0, hashlib.md5(v.encode()).hexdigest()) if x is None else \
                (1, 0x18273645 ^ x ^ ((x << 16 | x >> 16) & 0xFFFFFFFF))
            if (a["type"], a["value"]) != want:
                die(f"{name}.keyring: hashed attribute {a} of item {h['id']} is not {want}")

def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__.split("\n\n")[1])
    outdir, manifest_path = sys.argv[1], sys.argv[2]
    signal.signal(signal.SIGALRM, lambda *_: die(f"timed out after {DEADLINE} s"))
    signal.signal(signal.SIGTERM, lambda *_: die("terminated"))
    signal.alarm(DEADLINE)
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="make-gnome-keyrings.")
    try:
        home = tmp + "/home"  # a clean environment: no DISPLAY, no GNOME_KEYRING_CONTROL, no real HOME
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home, "XDG_RUNTIME_DIR": tmp + "/run",
               "XDG_DATA_HOME": home + "/.local/share", "XDG_CONFIG_HOME": home + "/.config",
               "XDG_CACHE_HOME": home + "/.cache", "TMPDIR": tmp}
        for d in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"):
            os.makedirs(env[d], mode=0o700)
        keyrings = env["XDG_DATA_HOME"] + "/keyrings"  # gkm_util_locate_keyrings_directory()
        addr = start_bus(tmp, env)

        # Pass 1: create through the daemon that --unlock made create "login".
        gkd, conn, session, log = start_keyring(tmp, env, addr, SPEC["login"][0], "create")
        if ROOT + "/collection/login" not in get_all(conn, ROOT, S + "Service")["Collections"]:
            die("--unlock did not create the login keyring:\n" + open(log).read())
        create(conn, session)
        check_against_spec(read_back(conn, session), "before stopping")
        conn.close()
        stop(gkd)

        # Pass 2: a fresh daemon loads the files; unlocked, it gives the manifest. (In pass 1 the
        # values depend on whether the daemon's file monitor had reloaded a keyring after writing it.)
        gkd, conn, session, log = start_keyring(tmp, env, addr, None, "verify")
        for name, (pw, _, _) in SPEC.items():
            call(conn, ROOT, "UnlockWithMasterPassword", "o(oayays)", f"{ROOT}/collection/{name}",
                 (session, b"", pw.encode(), "text/plain"), iface=INTERNAL)
        default = call(conn, ROOT, "ReadAlias", "s", "default", iface=S + "Service")[0]
        expected = read_back(conn, session)
        conn.close()
        stop_all()
        check_against_spec(expected, "after reloading the files")
        if default != ROOT + "/collection/login":
            die(f"the default alias is {default}")

        # Copy the files, check their unencrypted parts, write the manifest.
        files = sorted(f for f in os.listdir(keyrings) if f.endswith(".keyring") or f == "default")
        manifest = {"generator": "scripts/make-gnome-keyrings.py", "notes": NOTES, "files": files,
                    "gnome_keyring_version": subprocess.run(["gnome-keyring-daemon", "--version"],
                                                            capture_output=True, text=True).stdout.strip(),
                    "default": open(keyrings + "/default").read(), "keyrings": []}
        for name, (pw, _, _) in SPEC.items():
            data = open(f"{keyrings}/{name}.keyring", "rb").read()
            k = {"file": name + ".keyring", "name": name, "password": pw or None,
                 "format": "binary" if pw else "text"}  # an empty password makes gkr write a GKeyFile
            if pw:
                k["binary_header"] = parse_binary(data)
                check_hashed(name, k["binary_header"])
            elif b"\0" in data or not data.decode().startswith("[keyring]\n"):
                die(f"{name}.keyring is not the plain-text [keyring] format")
            manifest["keyrings"].append(dict(k, **expected[name]))
        os.makedirs(outdir, exist_ok=True)
        for f in files:
            shutil.copyfile(f"{keyrings}/{f}", f"{outdir}/{f}")
        os.makedirs(os.path.dirname(os.path.abspath(manifest_path)), exist_ok=True)
        with open(manifest_path, "w") as f:
            json.dump(manifest, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print(f"make-gnome-keyrings: wrote {', '.join(files)} to {outdir} and {manifest_path} "
              f"in {time.monotonic() - started:.1f} s")
    except DBusErrorResponse as e:
        die(f"D-Bus call failed: {e.name}: {e.data}")
    except TimeoutError:
        die(f"a D-Bus call got no reply in {CALL_TIMEOUT} s")
    finally:
        signal.alarm(0)
        stop_all()
        shutil.rmtree(tmp, ignore_errors=True)

if __name__ == "__main__":
    main()
