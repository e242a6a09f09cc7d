#!/usr/bin/python3
# Drives Seahorse ("Passwords and Keys") as a person would, for SeahorseTests: through its
# accessibility tree (AT-SPI, pyatspi) to find widgets and read what it shows, and xdotool for
# the clicks and keys a person makes, under the Xvfb display in DISPLAY. After each step it
# takes a screenshot (ARTIFACTS/NN-STEP.png) and a snapshot of the Secret Service (every
# keyring: label, locked, and its items' labels and secrets when unlocked, through
# secretstorage), and prints both with what the window showed as one JSON line
# {"step": ..., "ui": ..., "state": ...}; the test checks them.
#
# usage: seahorse-drive.py ARTIFACTS
# Standard input: the values the person types, one per line: the edited item's new secret, the
# added item's secret. Passwords for secretd's prompts come from the scripted pinentry.
import json
import os
import subprocess
import sys
import time

import pyatspi
import secretstorage

import gui_person as person

ARTIFACTS = sys.argv[1]
TYPED = sys.stdin.read().split("\n")
EDITED_SECRET, ADDED_SECRET = TYPED[0], TYPED[1]
step_number = 0


# ---- the accessibility tree

def seahorse():
    # Seahorse 43 (Debian 12) is "seahorse" on the accessibility bus; 47 (Debian 13) names
    # itself by its application id.
    return person.application("seahorse", "org.gnome.seahorse.Application")


def all_of(role, name=None, contains=None, visible=True, inside=None):
    return person.all_of(inside or seahorse(), role, name, contains, visible)


def wait_for(what, find, seconds=15):
    """The first result of find() that is not empty or None, within seconds."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            result = find()
        except Exception:
            result = None
        if result:
            return result
        time.sleep(0.2)
    fail("no %s after %d s" % (what, seconds))


def one(role, name=None, contains=None):
    return wait_for("%s %r" % (role, name or contains), lambda: (all_of(role, name, contains) or [None])[0])


def rows(label_contains, visible=True):
    """The list rows that hold a label containing label_contains."""
    found = []
    for label in all_of("label", contains=label_contains, visible=visible):
        row = label.parent
        while row is not None and not person.is_a(row, "list item"):
            row = row.parent
        if row is not None:
            found.append(row)
    return found


def row(label_contains):
    return wait_for("row %r" % label_contains, lambda: (rows(label_contains) or [None])[0])


def text_of(node):
    return node.queryText().getText(0, -1)


def x_of(node):
    return node.queryComponent().getExtents(pyatspi.DESKTOP_COORDS).x


def action(node, name=None):
    actions = node.queryAction()
    for index in range(actions.nActions):
        if name is None or actions.getName(index) == name:
            actions.doAction(index)
            return
    fail("%s %r has no action %s" % (node.getRoleName(), node.name, name))


# ---- what a person does: xdotool

xdotool = person.xdotool
click = person.click


def type_into(field, text):
    click(field)
    xdotool("key", "ctrl+a")
    person.type_text(text)


def key(name):
    xdotool("key", name)
    time.sleep(0.5)


def keyring_menu(keyring, item):
    """Right-clicks the keyring in the sidebar and chooses item from its menu."""
    click(row(keyring), button="3", x_offset=30)
    click(one("menu item", item))


# ---- the report

def snapshot():
    bus = secretstorage.dbus_init()
    keyrings = {}
    for collection in secretstorage.get_all_collections(bus):
        name = collection.collection_path.rsplit("/", 1)[1]
        if name == "session":
            continue
        entry = {"label": collection.get_label(), "locked": collection.is_locked()}
        if not entry["locked"]:
            entry["items"] = {item.get_label(): item.get_secret().decode() for item in collection.get_all_items()}
        keyrings[name] = entry
    bus.close()
    return keyrings


def report(step, ui=None):
    global step_number
    step_number += 1
    time.sleep(1)  # what the click started (a D-Bus call, a prompt) has ended
    subprocess.run(["import", "-window", "root", os.path.join(ARTIFACTS, "%02d-%s.png" % (step_number, step))])
    print(json.dumps({"step": step, "ui": ui or {}, "state": snapshot()}), flush=True)


def fail(message):
    try:
        subprocess.run(["import", "-window", "root", os.path.join(ARTIFACTS, "failed.png")])
    except Exception:
        pass
    # What the accessibility bus showed, beside the screenshot.
    try:
        with open(os.path.join(ARTIFACTS, "failed-tree.txt"), "w") as tree:
            tree.write(person.describe(pyatspi.Registry.getDesktop(0)) + "\n")
    except Exception:
        pass
    # What Seahorse said, so that a failure on a machine nobody can look at explains itself.
    try:
        log.flush()
        with open(os.path.join(ARTIFACTS, "seahorse.log")) as said:
            tail = said.read()[-2000:]
        if tail:
            message += "; seahorse said: " + tail
        if seahorse_process.poll() is not None:
            message += "; seahorse exited with %d" % seahorse_process.returncode
    except Exception:
        pass
    print(json.dumps({"step": "failed", "error": message}), flush=True)
    sys.exit(1)


def item_labels():
    """The items listed for the selected keyring: the rows right of the sidebar, each by its
    leftmost label (its description; the kind of item is on the right)."""
    sidebar = row("Login")
    right_of = x_of(sidebar) + sidebar.queryComponent().getExtents(pyatspi.DESKTOP_COORDS).width
    labels = []
    for frame in all_of("frame"):
        for entry in all_of("list item", inside=frame):
            if x_of(entry) < right_of:
                continue
            names = sorted(all_of("label", inside=entry), key=x_of)
            if names:
                labels.append(names[0].name.split("\n")[0])
    return sorted(labels)


def open_item(label):
    click(row(label), repeat=2)
    return one("dialog", "Item Properties")


# ---- the steps

# Seahorse, on the desktop the test made (Xvfb, the accessibility bus; VirtualDesktop).
log = open(os.path.join(ARTIFACTS, "seahorse.log"), "w")
seahorse_process = subprocess.Popen(["seahorse"], stdout=subprocess.DEVNULL, stderr=log)
try:
    def window():
        if seahorse_process.poll() is not None:
            fail("seahorse exited before showing a window")
        return all_of("frame")
    wait_for("window", window, 60)
    # Wide enough for the sidebar and the list side by side.
    xdotool("search", "--sync", "--onlyvisible", "--class", "seahorse", "windowsize", "1000", "700")
    def login_items():
        # Under load Seahorse may still be adding its backends after the click, and leave
        # another one selected (a CI screenshot showed "GnuPG keys"): select Login again.
        labels = item_labels()
        if not labels:
            click(row("Login"))
        return labels
    click(row("Login"))
    wait_for("items", login_items, 30)
    sidebar = sorted({r.name for r in all_of("label") if r.name in ("Login", "GnuPG keys", "OpenSSH keys")})
    report("opened", {"sidebar": sidebar, "items": item_labels()})

    dialog = open_item("Mail account")
    action(one("icon", "dialog-password-symbolic"))  # the eye: show the password
    description, password = all_of("text", inside=dialog)[:2]
    report("shown", {"description": text_of(description), "password": text_of(password)})

    type_into(description, "Mail (edited)")
    type_into(password, EDITED_SECRET)
    key("Escape")  # closing asks whether to save the changes
    click(one("push button", "OK"))
    report("edited")

    click(min(all_of("toggle button"), key=x_of))  # the "+" at the top left
    click(row("Safely store a password"))
    dialog = one("dialog", "Add Password")
    type_into(all_of("text", inside=dialog)[0], "Added in Seahorse")
    type_into(all_of("password text", inside=dialog)[0], ADDED_SECRET)
    click(all_of("push button", "Add", inside=dialog)[0])
    report("added", {"items": wait_for("the added item", lambda: "Added in Seahorse" in item_labels() and item_labels())})

    open_item("Second item")
    click(one("push button", "Delete Password"), top=True)
    click(all_of("push button", "Delete", inside=one("alert", "Question"))[0])
    report("deleted", {"items": wait_for("the list without the item",
                                         lambda: "Second item" not in item_labels() and item_labels())})

    keyring_menu("Login", "Lock")
    report("locked")

    keyring_menu("Login", "Unlock")  # secretd's prompt: pinentry answers
    report("unlocked", {"items": wait_for("items after the unlock", item_labels)})

    keyring_menu("Login", "Change Password")  # secretd's prompt: current, then new
    report("password changed")

    click(min(all_of("toggle button"), key=x_of))
    click(row("Used to store application"))
    dialog = one("dialog", "Add password keyring")
    type_into(all_of("text", inside=dialog)[0], "Work")
    click(all_of("push button", "Add", inside=dialog)[0])  # secretd's prompt: the new keyring's password
    wait_for("the new keyring", lambda: rows("Work"))
    report("keyring added", {"sidebar": sorted({r.name for r in all_of("label") if r.name in ("Login", "Work")})})

    keyring_menu("Work", "Delete")
    checkbox = one("check box")
    click(checkbox)
    click(one("push button", "Delete"))
    wait_for("the sidebar without the keyring", lambda: not rows("Work") and [True])
    report("keyring deleted")
finally:
    seahorse_process.terminate()
    try:
        seahorse_process.wait(5)
    except subprocess.TimeoutExpired:
        seahorse_process.kill()
