"""Starts a prompt and leaves it waiting (ClientFaultTests.disconnectMidPrompt).
    prompt-client.py unlock|group-change|ask-group
`unlock`: of the locked login keyring; `group-change`: adding a member to an access group;
`ask-group`: using an item of an ask-mode group. Calls Prompt twice, prints the prompt's path
and waits to be killed."""
import sys
import time

from prelude import LOGIN, ROOT, SERVICE, address, call, connect

mode = sys.argv[1]
conn = connect()
if mode == "unlock":
    prompt = call(conn, SERVICE, "Unlock", "ao", ([LOGIN],))[1]
elif mode == "group-change":
    groups = address(ROOT, "io.github.secretd.AccessGroups1")
    prompt = call(conn, groups, "AddMember", "ss(oayays)", ("com.example.ask", "exe:/usr/bin/true", ("/", b"", b"", "")))[0]
else:
    unlocked, locked = call(conn, SERVICE, "SearchItems", "a{ss}", ({"fault": "ask"},))
    prompt = call(conn, SERVICE, "Unlock", "ao", (locked,))[1]
p = address(prompt, "org.freedesktop.Secret.Prompt")
call(conn, p, "Prompt", "s", ("",))
call(conn, p, "Prompt", "s", ("",))  # asking again must not start a second pinentry
print(prompt, flush=True)
time.sleep(600)
