#!/usr/bin/python3
"""Create REAL KWallet wallet files (with the real kwalletd5) as importer test input.

Usage: make-kwallets.py OUTDIR MANIFEST.json

A private dbus-daemon and kwalletd5 (QT_QPA_PLATFORM=offscreen), with HOME/XDG_* in a temp dir (the
user's wallets are never touched). Each wallet is created the way pam_kwallet creates one at login,
with no dialog: NAME.salt gets 56 random bytes and kwalletd's D-Bus method pamOpen gets the key
PBKDF2-HMAC-SHA512(password, salt, 50000 iterations, 56 bytes), which is what pam_kwallet derives
from the login password (kwallet-pam's kwalletd_hash). kwalletd then creates NAME.kwl (format 0.1,
cipher 3 Blowfish-CBC, hash 2 PBKDF2-SHA512) and takes entries over D-Bus: writePassword (kwalletd
itself serializes the QString), writeEntry (a Stream: raw bytes), writeMap. A Map's bytes come from
KWallet's own client library: a placeholder written over D-Bus is overwritten by kwallet-query -w,
which turns its JSON into a QMap<QString,QString> and calls KWallet::Wallet::writeMap.
"Prompt on Open=false" in kwalletrc lets the D-Bus clients in without the access dialog.
A second kwalletd loads the files (pamOpen again); its D-Bus read-back, and kwallet-query -r for
maps, is MANIFEST.json, the result an importer must reproduce. Then wallets of the old format
(LEGACY), made through kwalletd's own dialogs in Xvfb. Needs python3-jeepney, libkf5wallet-bin
(kwalletd5, kwallet-query; Debian 12: 5.103), xvfb and xdotool.
"""
import base64, hashlib, json, os, shutil, signal, subprocess, sys, tempfile, time
from fixture_daemons import Daemons
from jeepney import DBusAddress, new_method_call
from jeepney.io.blocking import open_dbus_connection
from jeepney.wrappers import DBusErrorResponse, unwrap_msg

DEADLINE, CALL_TIMEOUT = 90, 20  # seconds for the whole run (SIGALRM) and for one D-Bus call
KWALLETD = DBusAddress("/modules/kwalletd5", "org.kde.kwalletd5", "org.kde.KWallet")
APPID = "make-kwallets"
PASSWORD, STREAM, MAP = 1, 2, 3  # KWallet::Wallet::EntryType

# name -> (password, folders); a folder is a list of (key, type, value): a str (Password), bytes
# (Stream) or a dict (Map). An empty list is a folder without entries.
SPEC = {
    "kdewallet": ("kde-pw ✓", {
        "Passwords": [
            ("mail.example.org", PASSWORD, "sécret ✓"),
            ("empty", PASSWORD, ""),
            ("two lines", PASSWORD, "line 1\nline 2"),
            ("shared", PASSWORD, "in Passwords"),
        ],
        "Form Data": [
            ("https://example.org/login#form", MAP, {"user": "alice", "pass": "p@ss=1;x", "ünï": "cødé ✓"}),
            ("empty map", MAP, {}),
            ("shared", PASSWORD, "in Form Data"),
        ],
        "Network Management": [
            ("{5a2b0f3c-1d2e-4f50-9a8b-7c6d5e4f3a2b};802-11-wireless-security", MAP, {"psk": "wifi-pw"}),
        ],
        "Streams": [
            ("binary", STREAM, bytes(range(256)) + b"\0\0"),
            ("empty stream", STREAM, b""),
        ],
        "Ünïcødé 📁": [("ключ 🔑", PASSWORD, "значение")],
        "Empty Folder": [],
    }),
    "work": ("work-pw", {
        "Passwords": [("vpn.example.com", PASSWORD, "vpn-secret")],
        "Streams": [("big", STREAM, bytes(i * 7 % 256 for i in range(100_000)))],
    }),
}
# Items made through kwalletd's Secret Service: (label, attributes, secret, content type). A label
# "FOLDER/KEY" names the entry; one without a slash goes to the folder "Secret Service".
FDO_ITEMS = {
    "kdewallet": [
        ("app token", {"xdg:schema": "org.example.App", "service": "example", "account": "bob"}, "token ✓".encode(), "text/plain"),
        ("app token", {"service": "example", "account": "carol"}, b"second token", "text/plain"),  # key "app token__0_"
        ("Apps/binary key", {"service": "binary"}, b"\x00\xffkey\x80", "application/octet-stream"),
    ],
}
FDO = "org.freedesktop.Secret."
FDO_ROOT = DBusAddress("/org/freedesktop/secrets", "org.freedesktop.secrets", FDO + "Service")
FDO_COLLECTION = lambda name: DBusAddress(f"/org/freedesktop/secrets/collection/{name}", "org.freedesktop.secrets",
                                          FDO + "Collection")
# Wallets of format 0.0 (the SHA-1 key of KDE before 4.13), which kwalletd still writes when it
# cannot write NAME.salt (here a directory of that name): made through kwalletd's own dialogs, in
# Xvfb, driven with xdotool (a new wallet: the wizard, Blowfish, the password twice), then opened
# again through its password dialog and read back. One per length class of the old key (one to
# four 16-byte parts of the password).
LEGACY = {
    "legacy8": "Lg-pw-8!",
    "legacy24": "Legacy-pw-24-characters!",
    "legacy40": "Legacy-pw-of-40-characters-0123456789abc",
    "legacy60": "Legacy-pw-of-60-characters-0123456789abcdefghijklmnopqrstuvw",
}
LEGACY_ENTRIES = [("Passwords", "mail.example.org", PASSWORD, "legacy ✓"), ("Streams", "blob", STREAM, b"\0\x01\xff")]
NOTES = [
    "Read back through D-Bus from a fresh kwalletd5 that loaded these files (pamOpen with the key).",
    "value: the entry's stored bytes (readEntry), base64. password: readPassword. map: kwallet-query -r (JSON).",
    "key_hex: PBKDF2-HMAC-SHA512(password UTF-8, NAME.salt, 50000, 56), what pam_kwallet hands kwalletd.",
]
daemons = Daemons("make-kwallets")  # the processes started; daemons.stop_all() ends them, newest first
procs, die, stop, stop_all, start_bus = daemons.procs, daemons.die, Daemons.stop, daemons.stop_all, daemons.start_bus


def start_kwalletd(tmp, env, tag):
    log = f"{tmp}/kwalletd-{tag}.log"
    p = subprocess.Popen(["kwalletd5"], stdin=subprocess.DEVNULL, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env)
    procs.append(p)
    conn = open_dbus_connection(bus=env["DBUS_SESSION_BUS_ADDRESS"])
    bus = DBusAddress("/org/freedesktop/DBus", "org.freedesktop.DBus", "org.freedesktop.DBus")
    for _ in range(300):  # up to 30 s for the name to appear
        if p.poll() is not None:
            die(f"kwalletd5 exited with {p.returncode}:\n" + open(log).read())
        if call(conn, bus, "NameHasOwner", "s", KWALLETD.bus_name)[0]:
            return p, conn, log
        time.sleep(0.1)
    die("org.kde.kwalletd5 did not appear on the bus:\n" + open(log).read())


def call(conn, obj, method, sig=None, *args):
    msg = new_method_call(obj, method, sig, args)
    return unwrap_msg(conn.send_and_get_reply(msg, timeout=CALL_TIMEOUT))


def key(password, salt):
    return hashlib.pbkdf2_hmac("sha512", password.encode(), salt, 50000, 56)


def pam_open(conn, name, hash_, log):
    """pamOpen has no reply (NoReply); wait for isOpen, then open a session of APPID on it."""
    conn.send(new_method_call(KWALLETD, "pamOpen", "sayi", (name, hash_, 0)))
    for _ in range(100):
        if call(conn, KWALLETD, "isOpen", "s", name)[0]:
            break
        time.sleep(0.1)
    else:
        die(f"pamOpen did not open {name}:\n" + open(log).read())
    handle = call(conn, KWALLETD, "open", "sxs", name, 0, APPID)[0]
    if handle < 0:
        die(f"open({name}) gave {handle}:\n" + open(log).read())
    return handle


def kwallet_query(env, name, folder, key_, write=None):
    args = ["kwallet-query", "-f", folder] + (["-w", key_] if write is not None else ["-r", key_]) + [name]
    r = subprocess.run(args, input=write or "", capture_output=True, text=True, env=env, timeout=CALL_TIMEOUT)
    if r.returncode != 0:
        die(f"{' '.join(args)}: exit {r.returncode}: {r.stdout} {r.stderr}")
    return r.stdout


def create(conn, env, log, kwl_dir):
    for name, (pw, folders) in SPEC.items():
        salt = os.urandom(56)
        with open(f"{kwl_dir}/{name}.salt", "wb") as f:  # as pam_kwallet's createNewSalt does
            f.write(salt)
        os.chmod(f"{kwl_dir}/{name}.salt", 0o600)
        h = pam_open(conn, name, key(pw, salt), log)
        maps = []
        for folder, entries in folders.items():
            if not call(conn, KWALLETD, "createFolder", "iss", h, folder, APPID)[0]:
                die(f"createFolder {folder!r} failed")
            for k, kind, value in entries:
                if kind == PASSWORD:
                    rc = call(conn, KWALLETD, "writePassword", "issss", h, folder, k, value, APPID)[0]
                elif kind == STREAM:
                    rc = call(conn, KWALLETD, "writeEntry", "issayis", h, folder, k, value, STREAM, APPID)[0]
                else:
                    rc = call(conn, KWALLETD, "writeMap", "issays", h, folder, k, b"", APPID)[0]
                    maps.append((folder, k, value))
                if rc != 0:
                    die(f"writing {folder}/{k} gave {rc}")
        call(conn, KWALLETD, "sync", "is", h, APPID)
        for folder, k, value in maps:  # ASCII JSON: kwallet-query reads it with toLatin1()
            kwallet_query(env, name, folder, k, write=json.dumps(value, ensure_ascii=True) + "\n")
        call(conn, KWALLETD, "sync", "is", h, APPID)
        if call(conn, KWALLETD, "close", "sb", name, True)[0] != 0:
            die(f"close({name}) failed")


def fdo_unlock(conn, name):
    """Unlocks the wallet's collection (open already: no dialog) and opens a plain session."""
    path = FDO_COLLECTION(name).object_path
    unlocked, prompt = call(conn, FDO_ROOT, "Unlock", "ao", [path])
    if prompt != "/":
        call(conn, DBusAddress(prompt, "org.freedesktop.secrets", FDO + "Prompt"), "Prompt", "s", "")
    props = DBusAddress(path, "org.freedesktop.secrets", "org.freedesktop.DBus.Properties")
    for _ in range(100):
        if not call(conn, props, "Get", "ss", FDO + "Collection", "Locked")[0][1]:
            return call(conn, FDO_ROOT, "OpenSession", "sv", "plain", ("s", ""))[1]
        time.sleep(0.1)
    die(f"the collection of {name} stays locked")


def create_fdo_items(conn, name):
    """Items made through kwalletd's own Secret Service (org.freedesktop.secrets): their
    attributes, content type and times go to NAME_attributes.json beside the wallet."""
    session = fdo_unlock(conn, name)
    for label, attrs, secret, content_type in FDO_ITEMS[name]:
        props = {FDO + "Item.Label": ("s", label), FDO + "Item.Attributes": ("a{ss}", attrs)}
        got = call(conn, FDO_COLLECTION(name), "CreateItem", "a{sv}(oayays)b", props,
                   (session, b"", secret, content_type), False)
        if got[1] != "/":
            die(f"CreateItem {label!r} in {name} wants a prompt")


def read_fdo_items(conn, name):
    """Every entry as kwalletd's own Secret Service shows it: label, attributes, secret, type."""
    session = fdo_unlock(conn, name)
    props = DBusAddress(FDO_COLLECTION(name).object_path, "org.freedesktop.secrets", "org.freedesktop.DBus.Properties")
    items = []
    for path in call(conn, props, "Get", "ss", FDO + "Collection", "Items")[0][1]:
        item = DBusAddress(path, "org.freedesktop.secrets", FDO + "Item")
        p = {k: v[1] for k, v in call(conn, item.with_interface("org.freedesktop.DBus.Properties"), "GetAll", "s",
                                        FDO + "Item")[0].items()}
        secret = call(conn, item, "GetSecret", "o", session)[0]
        items.append({"label": p["Label"], "attributes": dict(sorted(p["Attributes"].items())),
                      "secret": base64.b64encode(secret[2]).decode(), "content_type": secret[3],
                      "created": p["Created"], "modified": p["Modified"]})
    return sorted(items, key=lambda i: i["label"])


def xdo(env, *args):
    return subprocess.run(["xdotool", *args], env=env, capture_output=True, text=True, timeout=CALL_TIMEOUT).stdout.strip()


def dialog(env, previous):
    """The newest visible kwalletd window other than `previous`."""
    for _ in range(100):
        windows = [w for w in xdo(env, "search", "--onlyvisible", "--class", "kwalletd5").split("\n") if w and w != previous]
        if windows:
            time.sleep(0.3)
            return windows[-1]
        time.sleep(0.1)
    die("no kwalletd dialog appeared")


def type_password(env, window, password, twice):
    xdo(env, "mousemove", "--window", window, "20", "20")  # no window manager: keys go where the pointer is
    for n in range(2 if twice else 1):
        if n:
            xdo(env, "key", "Tab")
        xdo(env, "type", "--delay", "15", password)
        time.sleep(0.2)
    xdo(env, "key", "Return")


def open_by_dialog(conn, env, name, password, new, log):
    """open() with kwalletd's dialogs answered; returns the handle (of a second call, as the
    first one's reply waits for the dialogs)."""
    conn.send(new_method_call(KWALLETD, "open", "sxs", (name, 0, APPID)))
    window = dialog(env, None)
    if new:  # the wizard: "Classic, blowfish encrypted file", then Finish
        xdo(env, "mousemove", "--window", window, "109", "167", "click", "1")
        time.sleep(0.3)
        xdo(env, "mousemove", "--window", window, "362", "336", "click", "1")
        window = dialog(env, window)
    type_password(env, window, password, twice=new)
    for _ in range(100):
        if call(conn, KWALLETD, "isOpen", "s", name)[0]:
            with open_dbus_connection(bus=env["DBUS_SESSION_BUS_ADDRESS"]) as other:
                return call(other, KWALLETD, "open", "sxs", name, 0, APPID)[0]
        time.sleep(0.1)
    die(f"the dialogs did not open {name}:\n" + open(log).read())


def create_legacy(tmp, env, kwl_dir):
    """The LEGACY wallets, made and read back through kwalletd's dialogs in Xvfb."""
    read_end, write_end = os.pipe()  # Xvfb picks a free display and writes its number there
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write_end), "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=open(tmp + "/xvfb.log", "w"), pass_fds=[write_end])
    procs.append(xvfb)
    os.close(write_end)
    with os.fdopen(read_end) as f:
        display = ":" + (f.readline().strip() or die("Xvfb did not start:\n" + open(tmp + "/xvfb.log").read()))
    env = dict(env, DISPLAY=display, QT_QPA_PLATFORM="xcb")
    for _ in range(100):
        if subprocess.run(["xdotool", "getmouselocation"], env=env, capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    kwalletd, conn, log = start_kwalletd(tmp, env, "legacy")
    out = {}
    for name, pw in LEGACY.items():
        os.mkdir(f"{kwl_dir}/{name}.salt")
        h = open_by_dialog(conn, env, name, pw, True, log)
        for folder, k, kind, value in LEGACY_ENTRIES:
            if kind == PASSWORD:
                call(conn, KWALLETD, "writePassword", "issss", h, folder, k, value, APPID)
            else:
                call(conn, KWALLETD, "writeEntry", "issayis", h, folder, k, value, STREAM, APPID)
        if call(conn, KWALLETD, "close", "sb", name, True)[0] != 0:
            die(f"close({name}) failed")
        h = open_by_dialog(conn, env, name, pw, False, log)  # from the file, with the password
        folders = {}
        for folder in call(conn, KWALLETD, "folderList", "is", h, APPID)[0]:
            folders[folder] = []
            for k in call(conn, KWALLETD, "entryList", "iss", h, folder, APPID)[0]:
                kind = call(conn, KWALLETD, "entryType", "isss", h, folder, k, APPID)[0]
                e = {"key": k, "type": kind, "value": base64.b64encode(call(conn, KWALLETD, "readEntry", "isss", h, folder, k, APPID)[0]).decode()}
                if kind == PASSWORD:
                    e["password"] = call(conn, KWALLETD, "readPassword", "isss", h, folder, k, APPID)[0]
                folders[folder].append(e)
        call(conn, KWALLETD, "close", "sb", name, True)
        os.rmdir(f"{kwl_dir}/{name}.salt")
        for folder, k, kind, value in LEGACY_ENTRIES:
            e = next((e for e in folders.get(folder, []) if e["key"] == k), None)
            if e is None or e.get("password", base64.b64decode(e["value"])) != value:
                die(f"{name}/{folder}/{k} read back as {e}")
        out[name] = {"folders": folders, "secret_service": [], "legacy": True}
    conn.close()
    stop(kwalletd)
    stop(xvfb)
    return out


def read_back(conn, env, log, kwl_dir):
    out = {}
    for name, (pw, _) in SPEC.items():
        salt = open(f"{kwl_dir}/{name}.salt", "rb").read()
        h = pam_open(conn, name, key(pw, salt), log)
        folders = {}
        for folder in call(conn, KWALLETD, "folderList", "is", h, APPID)[0]:
            entries = []
            for k in call(conn, KWALLETD, "entryList", "iss", h, folder, APPID)[0]:
                kind = call(conn, KWALLETD, "entryType", "isss", h, folder, k, APPID)[0]
                raw = call(conn, KWALLETD, "readEntry", "isss", h, folder, k, APPID)[0]
                e = {"key": k, "type": kind, "value": base64.b64encode(raw).decode()}
                if kind == PASSWORD:
                    e["password"] = call(conn, KWALLETD, "readPassword", "isss", h, folder, k, APPID)[0]
                elif kind == MAP:
                    e["map"] = json.loads(kwallet_query(env, name, folder, k))
                entries.append(e)
            folders[folder] = entries
        items = read_fdo_items(conn, name)
        call(conn, KWALLETD, "close", "sb", name, True)
        out[name] = {"folders": folders, "secret_service": items, "salt_hex": salt.hex(), "key_hex": key(pw, salt).hex()}
    return out


def check_against_spec(got):
    for name, (pw, folders) in SPEC.items():
        have = got[name]["folders"]
        fdo_folders = {label.split("/")[0] if "/" in label else "Secret Service" for label, *_ in FDO_ITEMS.get(name, [])}
        if sorted(have) != sorted(set(folders) | fdo_folders):
            die(f"{name}: folders {sorted(have)}, not {sorted(folders)}")
        for folder, entries in folders.items():
            by_key = {e["key"]: e for e in have[folder]}
            if sorted(by_key) != sorted(k for k, _, _ in entries):
                die(f"{name}/{folder}: entries {sorted(by_key)}")
            for k, kind, value in entries:
                e = by_key[k]
                ok = e["type"] == kind and (
                    e.get("password") == value if kind == PASSWORD else
                    base64.b64decode(e["value"]) == value if kind == STREAM else e.get("map") == value)
                if not ok:
                    die(f"{name}/{folder}/{k} read back as {e}")


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__.split("\n\n")[1])
    outdir, manifest_path = sys.argv[1], sys.argv[2]
    signal.signal(signal.SIGALRM, lambda *_: die(f"timed out after {DEADLINE} s"))
    signal.signal(signal.SIGTERM, lambda *_: die("terminated"))
    signal.alarm(DEADLINE)
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="make-kwallets.")
    try:
        home = tmp + "/home"  # a clean environment: no DISPLAY, no real HOME
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home, "XDG_RUNTIME_DIR": tmp + "/run",
               "XDG_DATA_HOME": home + "/.local/share", "XDG_CONFIG_HOME": home + "/.config",
               "XDG_CACHE_HOME": home + "/.cache", "TMPDIR": tmp, "QT_QPA_PLATFORM": "offscreen"}
        for d in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"):
            os.makedirs(env[d], mode=0o700)
        kwl_dir = env["XDG_DATA_HOME"] + "/kwalletd"  # Backend::getSaveLocation()
        os.makedirs(kwl_dir, mode=0o700)
        with open(env["XDG_CONFIG_HOME"] + "/kwalletrc", "w") as f:
            f.write("[Wallet]\nEnabled=true\nFirst Use=false\nPrompt on Open=false\nClose When Idle=false\n"
                    "Launch Manager=false\nLeave Open=true\n")
        env["DBUS_SESSION_BUS_ADDRESS"] = start_bus(tmp, env)

        kwalletd, conn, log = start_kwalletd(tmp, env, "create")
        create(conn, env, log, kwl_dir)
        conn.close()
        stop(kwalletd)

        # kwalletd's Secret Service makes a collection of each wallet there is when it starts.
        kwalletd, conn, log = start_kwalletd(tmp, env, "secret-service")
        for name in FDO_ITEMS:
            salt = open(f"{kwl_dir}/{name}.salt", "rb").read()
            h = pam_open(conn, name, key(SPEC[name][0], salt), log)
            create_fdo_items(conn, name)
            call(conn, KWALLETD, "sync", "is", h, APPID)
            call(conn, KWALLETD, "close", "sb", name, True)
        conn.close()
        stop(kwalletd)

        kwalletd, conn, log = start_kwalletd(tmp, env, "verify")
        expected = read_back(conn, env, log, kwl_dir)
        conn.close()
        stop(kwalletd)
        check_against_spec(expected)
        expected.update(create_legacy(tmp, env, kwl_dir))
        stop_all()

        files = sorted(f for f in os.listdir(kwl_dir) if f.endswith((".kwl", ".salt", "_attributes.json")))
        manifest = {"generator": "scripts/make-kwallets.py", "notes": NOTES, "files": files,
                    "kwalletd_version": subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libkf5wallet-bin"],
                                                       capture_output=True, text=True).stdout.strip(),
                    "wallets": []}
        for name, pw in [(n, spec[0]) for n, spec in SPEC.items()] + list(LEGACY.items()):
            header = list(open(f"{kwl_dir}/{name}.kwl", "rb").read(16))
            manifest["wallets"].append(dict(expected[name], name=name, file=name + ".kwl", password=pw, header=header))
        os.makedirs(outdir, exist_ok=True)
        for f in files:
            shutil.copyfile(f"{kwl_dir}/{f}", f"{outdir}/{f}")
        os.makedirs(os.path.dirname(os.path.abspath(manifest_path)), exist_ok=True)
        with open(manifest_path, "w") as f:
            json.dump(manifest, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print(f"make-kwallets: wrote {', '.join(files)} to {outdir} and {manifest_path} "
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
