#!/usr/bin/python3
# A person answering gnome-keyring's prompt (gcr-prompter's "Unlock Keyring" dialog, under the
# Xvfb display in DISPLAY), for LiveImportTests: waits for the dialog, types the password read
# from standard input into its password field (xdotool) and clicks Unlock. Prints "answered"
# and the dialog's message, or fails after TIMEOUT seconds (default 60) with none.
# usage: answer-gcr-prompt.py [TIMEOUT] < password
import sys
import time

import gui_person as person

password = sys.stdin.read()
deadline = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 60)


def dialog():
    for node in person.all_of(person.application("gcr-prompter"), "dialog"):
        return node
    return None


while (found := dialog()) is None:
    if time.monotonic() > deadline:
        sys.exit("no gnome-keyring prompt appeared")
    time.sleep(0.2)
time.sleep(0.5)  # the dialog has taken focus
message = [n.name for n in person.all_of(found, "label") if "wants access" in n.name]
person.click(person.all_of(found, "password text")[0])
person.type_text(password)
person.click(person.all_of(found, "push button", "Unlock")[0])
print("answered", *message)
