"""Who secretd takes this process for, and what it lets it see (AccessGroupTests).
    identity-probe.py GO_FILE SERVICE              waits for GO_FILE, then connects and asks
    identity-probe.py --exec-after-connect MEMBER SERVICE
        connects, then forks: this process becomes MEMBER (exec, as a member of a group would
        run) while the child waits a moment and asks over the connection it kept.
Prints one JSON line: identity, confined, and the paths SearchItems({service: SERVICE}) shows."""
import json
import os
import sys
import time

from jeepney import DBusAddress

from prelude import ROOT, SERVICE, call, connect

GROUPS = DBusAddress(ROOT, bus_name="org.freedesktop.secrets", interface="io.github.secretd.AccessGroups1")


def ask(conn, service):
    identity, _, _, confined = call(conn, GROUPS, "WhoAmI")
    unlocked, locked = call(conn, SERVICE, "SearchItems", "a{ss}", ({"service": service},))
    print(json.dumps({"identity": identity, "confined": confined, "items": unlocked + locked}), flush=True)


if sys.argv[1] == "--exec-after-connect":
    member, service = sys.argv[2], sys.argv[3]
    conn = connect()
    if os.fork() == 0:
        time.sleep(1)  # the parent is MEMBER by now
        ask(conn, service)
        os._exit(0)
    os.execv(member, [member, "5"])
else:
    go, service = sys.argv[1], sys.argv[2]
    while not os.path.exists(go):
        time.sleep(0.05)
    ask(connect(), service)
