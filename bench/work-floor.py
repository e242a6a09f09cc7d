#!/usr/bin/env python3
"""The floor of the database work in one secretd store and one lookup, for `make bench`: the
SQLite statements secretd runs for them, run on a copy of secretd's own database (its schema,
its items, the same disk) with nothing around them. bench/run.sh runs it after each round of
secretd, once secretd has stopped.
usage: work-floor.py DATABASE [STORES] [LOOKUPS]      (STORES: 2000, LOOKUPS: 5000)

A lookup (SearchItems + GetSecrets) is, in one read snapshot: the count that picks the search's
driving attribute (`LIMIT 2`), the search driven by one attribute key with the other checked per
item, and the item's row with its sealed contents. A store (CreateItem with replace) is, in one
transaction: the count, the replace search over three keys, the item's row inserted with its
sealed contents, three index entries, and the durable commit (WAL, synchronous=FULL). secretd
does at least this (its store also updates the row once it is sealed to its id). The statements
model Store.search, Store.leastCommon and Store.item(id:) in Sources/SecretStore/Store.swift: a
change there is a change here.
The interpreter's cost per statement (a trivial statement, measured here) is taken off, so the
figures are lower bounds of what SQLite and the kernel spend, whatever calls them.
Prints {"lookup_sql_cpu_ms", "store_sql_cpu_ms", "store_sql_kernel_cpu_ms",
"statement_overhead_cpu_ms", "stores", "lookups", "items"} as JSON (CPU: user + system, ms per
call; the kernel's alone for the store's)."""
import json, os, random, resource, shutil, sqlite3, sys

source = sys.argv[1]
stores = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
lookups = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
path = os.path.join(os.path.dirname(os.path.abspath(source)), "work-floor.sqlite3")
for stale in (path, path + "-wal", path + "-shm"):
    if os.path.exists(stale):
        os.remove(stale)
shutil.copyfile(source, path)
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA journal_mode = WAL")
db.execute("PRAGMA synchronous = FULL")
db.execute("PRAGMA foreign_keys = ON")


def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, usage.ru_stime


# The item columns secretd reads as a record: all but the sealed contents, from the file itself.
columns = [row[1] for row in db.execute("PRAGMA table_info(items)")]
record = ", ".join("i." + name for name in columns if name != "sealed")
count_sql = "SELECT count(*) FROM (SELECT 1 FROM attribute_index WHERE hash = ? LIMIT ?)"
exists = " AND EXISTS (SELECT 1 FROM attribute_index x WHERE x.hash = ? AND x.item_id = d.item_id)"
search_sql = f"SELECT {record} FROM attribute_index d CROSS JOIN items i ON i.id = d.item_id WHERE d.hash = ?"
row_sql = f"SELECT {', '.join(columns)} FROM items WHERE id = ?"

# Lookups of items that have two index keys or more, each by two of its keys.
keys = {}
for key, item in db.execute("SELECT hash, item_id FROM attribute_index"):
    keys.setdefault(item, []).append(key)
# The driver is the rarer key, as secretd's count finds (it counts the key that drove the last
# search first, and stops at one that has at most one entry).
entries = {}
for found in keys.values():
    for key in found:
        entries[key] = entries.get(key, 0) + 1
pairs = [(item, *sorted(found[:2], key=lambda key: entries[key])) for item, found in keys.items() if len(found) >= 2]
result = {"items": len(keys), "stores": stores, "lookups": lookups if pairs else 0}


def trivial(count):
    """CPU per statement of the interpreter and SQLite's least (a statement that reads nothing)."""
    before, _ = cpu()
    for _ in range(count):
        db.execute("SELECT 1").fetchall()
    return (cpu()[0] - before) / count


overhead = trivial(20000)
result["statement_overhead_cpu_ms"] = round(overhead * 1000, 4)

if pairs:
    chosen = [random.choice(pairs) for _ in range(lookups)]
    lookup_search = search_sql + exists + " ORDER BY i.id"
    db.execute("BEGIN")
    before, _ = cpu()
    for item, driver, other in chosen:
        db.execute(count_sql, (driver, 2)).fetchall()
        found = db.execute(lookup_search, (driver, other)).fetchall()
        db.execute(row_sql, (found[0][0],)).fetchall()
    spent = (cpu()[0] - before) / lookups
    db.execute("COMMIT")
    result["lookup_sql_cpu_ms"] = round((spent - 3 * overhead) * 1000, 4)

# Stores: a new item like an existing one (its collection, a sealed blob of its size), three
# new attribute keys, the replace search over them first.
template = db.execute(f"SELECT {', '.join(columns)} FROM items ORDER BY id DESC LIMIT 1").fetchone()
if template:
    values = dict(zip(columns, template))
    names = [name for name in columns if name != "id"]
    insert_sql = f"INSERT INTO items ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"
    index_sql = "INSERT OR IGNORE INTO attribute_index (hash, item_id) VALUES (?, ?)"
    store_search = search_sql + exists + exists + " ORDER BY i.id"
    size = len(values["sealed"])
    before, kernel_before = cpu()
    for _ in range(stores):
        new_keys = [os.urandom(8) for _ in range(3)]
        values["sealed"] = os.urandom(size)
        db.execute("BEGIN IMMEDIATE")
        db.execute(count_sql, (new_keys[0], 2)).fetchall()
        db.execute(store_search, new_keys).fetchall()
        item = db.execute(insert_sql, [values[name] for name in names]).lastrowid
        for key in new_keys:
            db.execute(index_sql, (key, item))
        db.execute("COMMIT")
    spent, kernel = (cpu()[0] - before) / stores, (cpu()[1] - kernel_before) / stores
    result["store_sql_cpu_ms"] = round((spent - 8 * overhead) * 1000, 4)
    result["store_sql_kernel_cpu_ms"] = round(kernel * 1000, 4)

db.close()
for leftover in (path, path + "-wal", path + "-shm"):
    if os.path.exists(leftover):
        os.remove(leftover)
print(json.dumps(result))
