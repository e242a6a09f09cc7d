#!/usr/bin/python3
# A person answering gnome-keyring's prompt (gcr-prompter's "Unlock Keyring" dialog, under the
# Xvfb display in DISPLAY), for LiveImportTests: waits for the dialog, types the password read
# from standard input into its password field (xdotool) and clicks Unlock. Prints "answered"
# and the dialog's message, or fails after TIMEOUT seconds (default 60) with none.
# usage: answer-gcr-prompt.py [TIMEOUT] < password
import subprocess
import sys
import time

import pyatspi

password = sys.stdin.read()
deadline = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 60)


def nodes(node):
    found = [node]
    try:
        children = list(node)
    except Exception:
        return found
    for child in children:
        if child is not None:
            found += nodes(child)
    return found


def dialog():
    for app in pyatspi.Registry.getDesktop(0):
        if app is not None and app.name == "gcr-prompter":
            for node in nodes(app):
                try:
                    if node.getRoleName() == "dialog" and node.getState().contains(pyatspi.STATE_SHOWING):
                        return node
                except Exception:
                    pass
    return None


def inside(root, role, name=None):
    return [n for n in nodes(root) if n.getRoleName() == role and (name is None or n.name == name)
            and n.getState().contains(pyatspi.STATE_SHOWING)]


def click(node):
    extents = node.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
    subprocess.run(["xdotool", "mousemove", str(extents.x + extents.width // 2), str(extents.y + extents.height // 2),
                    "click", "1"], check=True)


while (found := dialog()) is None:
    if time.monotonic() > deadline:
        sys.exit("no gnome-keyring prompt appeared")
    time.sleep(0.2)
time.sleep(0.5)  # the dialog has taken focus
message = [n.name for n in inside(found, "label") if "wants access" in n.name]
click(inside(found, "password text")[0])
subprocess.run(["xdotool", "type", "--delay", "15", password], check=True)
click(inside(found, "push button", "Unlock")[0])
print("answered", *message)
