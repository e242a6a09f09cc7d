#!/usr/bin/env python3
"""The durable-commit floor for `make bench`: single-row SQLite transactions in WAL mode with
synchronous=FULL (as secretd commits), in a scratch database in DIR (same disk as the providers'
data), made anew each time. keychain-bench runs it right before and right after each phase that
writes (50 commits each time), bench/run.sh once before each provider's round.
usage: commit-floor.py DIR [COUNT]      (COUNT: 300)
Prints {"median_ms", "p99_ms", "count", "samples_ms", "system_cpu_ms"} as JSON: system_cpu_ms is
the kernel's CPU per commit (this process's system time over the loop: the writes, fdatasync and
the file locks), a lower bound of any durable commit's CPU, since the interpreter's is left out."""
import json, os, resource, sqlite3, sys, time

directory = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
path = os.path.join(directory, "commit-floor.sqlite3")
for stale in (path, path + "-wal", path + "-shm"):
    if os.path.exists(stale):
        os.remove(stale)
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA journal_mode = WAL")
db.execute("PRAGMA synchronous = FULL")
db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, sealed BLOB NOT NULL)")
samples = []
system_before = resource.getrusage(resource.RUSAGE_SELF).ru_stime
for index in range(count):
    blob = os.urandom(200)
    start = time.perf_counter()
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO t (sealed) VALUES (?)", (blob,))
    db.execute("COMMIT")
    samples.append((time.perf_counter() - start) * 1000)
system_cpu = (resource.getrusage(resource.RUSAGE_SELF).ru_stime - system_before) * 1000 / count
db.close()
timed = [round(s, 4) for s in samples]
samples.sort()
def rank(fraction):
    return samples[min(len(samples) - 1, max(0, int(-(-len(samples) * fraction // 1)) - 1))]
print(json.dumps({"median_ms": round(rank(0.5), 3), "p99_ms": round(rank(0.99), 3), "count": len(samples), "samples_ms": timed,
                  "system_cpu_ms": round(system_cpu, 4)}))
