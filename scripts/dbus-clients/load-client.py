"""One of many clients at once (LoadTests.manyClients, and the `load` memory scenario of
`make bench`), through Python secretstorage as applications use it.
    load-client.py NAME COUNT SEED
COUNT random operations (store, lookup, search, delete) on its own 20 keys in the default
keyring, keeping a model of what it stored. Refusals because the keyring is locked are counted,
not failures. Prints as JSON its model, its first failures and how many there were, and the
refusals."""
import json
import random
import sys

import secretstorage
from jeepney.wrappers import DBusErrorResponse
from secretstorage.exceptions import LockedException

name, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
conn = secretstorage.dbus_init()
coll = secretstorage.get_default_collection(conn)
model, failures, locked = {}, [], 0
for n in range(count):
    key = "k%d" % rng.randrange(20)
    attrs = {"load": name, "key": key}
    op = rng.choice(["store", "store", "lookup", "search", "delete"])
    try:
        if op == "store":
            value = "%s-%d" % (name, n)
            coll.create_item(key, attrs, value.encode(), replace=True)
            model[key] = value
        elif op == "lookup":
            items = list(coll.search_items(attrs))
            got = items[0].get_secret().decode() if items else None
            if got != model.get(key):
                failures.append("lookup %s: %r != %r" % (key, got, model.get(key)))
        elif op == "search":
            attributes = [i.get_attributes() for i in coll.search_items({"load": name})]
            if any(not a for a in attributes):
                raise LockedException("locked items show no attributes (secretd seals them)")
            found = {a["key"] for a in attributes}
            if found != set(model):
                failures.append("search: %r != %r" % (sorted(found), sorted(model)))
        else:
            for item in coll.search_items(attrs):
                item.delete()
            model.pop(key, None)
    except LockedException:
        locked += 1
    except DBusErrorResponse as error:
        if error.name == "org.freedesktop.Secret.Error.IsLocked":
            locked += 1
        else:
            failures.append("%s %s: %s" % (op, key, error))
    except Exception as error:
        failures.append("%s %s: %s: %s" % (op, key, type(error).__name__, error))
print(json.dumps({"name": name, "model": model, "failures": failures[:5], "failure_count": len(failures), "locked": locked}))
