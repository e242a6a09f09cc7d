#!/usr/bin/env python3
"""How many D-Bus calls libsecret makes per operation, per provider, from a dbus-monitor log of
one keychain-bench round (bench/run.sh with COUNT_CALLS=yes): what each phase's floor counts.
usage: count-calls.py MONITOR_LOG ITEMS
keychain-bench times runs of calls to the floor service right before each phase; those runs cut
the log into the phases, in the order Workload.run and Workload.cycle make them. Only the calls the
bench process itself sends count (the whole-process lookups are other processes). Prints, per
phase, the calls per operation by destination and member, and the signals per operation."""
import collections, json, re, sys

log, items = sys.argv[1], int(sys.argv[2])
# The phases after each run of no-op calls, and how many operations each makes.
PHASES = [("the provider's own Peer.Ping (reference)", 300), ("store", items), ("lookup", items), ("library set + get (200 each)", 200),
          ("library removeAll (200 items, once)", 1), ("search all", 3),
          ("replace", max(1, items // 10)), ("delete", items)]
HEADER = re.compile(r"^(method call|signal|method return|error) time=\S+ sender=(\S+) -> destination=(\(null destination\)|\S+)"
                    r"(?: serial=\S+)?(?: path=([^;]*); interface=([^;]*); member=(\S+))?")

events = []  # (kind, sender, destination, interface, member)
for line in open(log, errors="replace"):
    match = HEADER.match(line)
    if match:
        kind, sender, destination, _, interface, member = match.groups()
        events.append((kind, sender, destination, interface, member))
FLOOR = "org.keychain.BenchFloor"
bench = next((e[1] for e in events if e[0] == "method call" and e[2] == FLOOR), None)
if bench is None:
    sys.exit("count-calls: no call of the floor service's Noop in the log")

segments, current, in_floor = [], None, False
for kind, sender, destination, interface, member in events:
    if kind == "method call" and destination == FLOOR and sender == bench:
        if not in_floor:
            current = collections.Counter()
            segments.append(current)
        in_floor = True
        continue
    if current is None:
        continue
    if kind == "method call" and sender == bench:
        in_floor = False
        where = "bus" if destination == "org.freedesktop.DBus" else "provider"
        current[f"{where}: {member}"] += 1
    elif kind == "signal" and interface and interface.startswith("org.freedesktop.Secret"):
        current[f"signal: {member}"] += 1

result = {}
for (phase, operations), counter in zip(PHASES, segments):
    per = {key: round(count / operations, 2) for key, count in sorted(counter.items())}
    to_provider = sum(v for k, v in per.items() if k.startswith("provider:"))
    to_bus = sum(v for k, v in per.items() if k.startswith("bus:"))
    result[phase] = {"calls_to_provider": round(to_provider, 2), "calls_to_bus": round(to_bus, 2), "by_member": per}
    print(f"{phase}: {to_provider:.2f} calls to the provider and {to_bus:.2f} to the bus per operation: "
          + ", ".join(f"{k} {v:g}" for k, v in per.items()))
print(json.dumps(result), file=sys.stderr)
if len(segments) < len(PHASES):
    sys.exit(f"count-calls: {len(segments)} phases in the log, {len(PHASES)} expected")
