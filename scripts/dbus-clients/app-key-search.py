"""What a client sees of the desktop portal's app keys (PortalTests): SearchItems by app_id, as
an app that looks for another app's key would.
    app-key-search.py APP_ID [APP_ID ...]
Prints one JSON object: each app id with the paths found (unlocked and locked)."""
import json
import sys

from prelude import SERVICE, call, connect

conn = connect()
found = {}
for app in sys.argv[1:]:
    unlocked, locked = call(conn, SERVICE, "SearchItems", "a{ss}", ({"app_id": app},))
    found[app] = list(unlocked) + list(locked)
print(json.dumps(found), flush=True)
