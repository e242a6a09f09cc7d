#!/usr/bin/env python3
"""Prints the tables of `make bench` and writes the merged JSON report.
usage: report.py [--no-work MAIN_LOOP.json WORKER_THREAD.json] PROVIDER.json... --out RESULTS.json
Each PROVIDER.json holds the provider's rounds ({"provider", "rounds": {"1": {...}, ...}}, one
keychain-bench run each, with that round's commit floor) and its memory scenarios. Every figure
of a phase is the median of its per-round medians, with their min-max as the spread; a phase's
floor multiple is taken in each round against that round's floors, then summarised the same way.
A run of some parts only (bench/run.sh PARTS=...) leaves out the tables of the others."""
import json, platform, statistics, subprocess, sys, time

args = sys.argv[1:]


def option(name, count):
    """The `count` values after `name` in args (removed from them), or None."""
    if name not in args:
        return None
    at = args.index(name)
    values = args[at + 1:at + 1 + count]
    del args[at:at + 1 + count]
    return values


out = option("--out", 1)[0]
no_work_files = option("--no-work", 2)
no_work = {mode: json.load(open(path)) for mode, path in zip(["main-loop", "worker-thread"], no_work_files or [])}
reports = {r["provider"]: r for r in (json.load(open(f)) for f in args)}
PROVIDERS = [p for p in ["secretd", "gnome-keyring", "keepassxc"] if p in reports] + \
    [p for p in reports if p not in ("secretd", "gnome-keyring", "keepassxc")]
PHASES = ["store", "lookup", "search_all_load_secrets", "replace", "delete", "keychain_set", "keychain_get",
          "secretctl_get_process", "secret_tool_lookup_process"]
# Each phase's floor: (round trips, durable commits, the phase whose floor samples it uses). The
# round trips are those libsecret makes for one operation against secretd and gnome-keyring
# (counted with dbus-monitor, bench/README.md): a store is CreateItem; a lookup SearchItems and
# GetSecrets; a clear SearchItems and Item.Delete. The library's set needs at least SearchItems
# and CreateItem, its get SearchItems and GetSecrets (it makes more: bench/README.md). A round
# trip is the floor service's no-op and a commit bench/commit-floor.py's, both timed right
# before and right after the phase in the same round (Workload.withFloors).
FLOORS = {"store": (1, 1, "store"), "replace": (1, 1, "replace"), "lookup": (2, 0, "lookup"),
          "delete": (2, 1, "delete"), "keychain_set": (2, 1, "library"), "keychain_get": (2, 0, "library")}
# Issue 20's targets for secretd (bench/targets.py).
from targets import CONCURRENCY_TARGET, CPU_TARGETS, FLOOR_TARGETS  # noqa: E402


def concurrency_ceiling(conc, cores):
    """The most stores per second that 8 clients could reach over 1, as a multiple: at best they
    keep every CPU busy, so 8 clients make at most cores / (CPU per store in all processes with
    8 clients) stores per second, against 1 / (one client's time per store) for one. On 2 cores
    a multiple above 2 exists only because one client leaves the CPUs idle part of its time
    (waiting for the disk, or for the next process in the chain to be scheduled): the faster
    one client's store, the lower the ceiling."""
    one, all8 = conc.get("stores_per_second_1"), conc.get("cpu_ms_per_store_8")
    if not one or not all8:
        return None
    return cores * 1000 / all8 / one


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    cores = sum(1 for l in open("/proc/cpuinfo") if l.startswith("processor"))
    def version(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()[0]
        except Exception:
            return "?"
    return {"cpu": cpu, "cores": cores, "kernel": platform.release(),
            "gnome_keyring": version(["gnome-keyring-daemon", "--version"]),
            "keepassxc": version(["keepassxc-cli", "--version"]), "date": time.strftime("%Y-%m-%d")}


def fmt(value, digits=2):
    return "-" if value is None else (f"{value:.{digits}f}" if isinstance(value, float) else str(value))


def ms(value):
    """A CPU time in ms, to the microsecond (JSON gives whole numbers back as ints)."""
    return fmt(None if value is None else float(value), 3)


def spread(values):
    """{"median", "min", "max", "rounds"} of the values that are there, or None."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3),
            "rounds": len(values)}


def show(s, digits=2, unit=""):
    """`median [min-max]`, the spread left out for a single round."""
    if s is None:
        return "-"
    if s["rounds"] == 1:
        return f"{s['median']:.{digits}f}{unit}"
    return f"{s['median']:.{digits}f}{unit} [{s['min']:.{digits}f}-{s['max']:.{digits}f}]"



def cpu_floors(cpu, phase):
    """The floors of a provider's CPU per store or lookup, from its own cheapest calls measured in
    the same rounds: a lookup is two calls (SearchItems, GetSecrets), a store one call and one
    durable commit. Peer.Ping counts the bus library alone (answered without the provider's
    code), ReadAlias the cheapest method through the provider's own dispatch; the commit is the
    kernel's CPU for one (bench/commit-floor.py's system time). For secretd, the last floor adds
    the database work itself (bench/work-floor.py: the SQLite statements of one store with its
    durable commit, or of one lookup, on a copy of its database) to ReadAlias."""
    def median(key):
        value = cpu.get(key)
        return value["median"] if value else None
    ping, alias, commit = median("provider_ping"), median("provider_read_alias"), median("commit_kernel")
    sql = median(f"{phase}_sql")
    if phase == "lookup":
        floors = {"2 x Peer.Ping": 2 * ping if ping else None, "2 x ReadAlias": 2 * alias if alias else None}
        if sql:
            floors["2 x ReadAlias + the lookup's SQL"] = 2 * alias + sql if alias else None
        return floors
    floors = {"Peer.Ping + commit": ping + commit if ping and commit else None,
              "ReadAlias + commit": alias + commit if alias and commit else None}
    if sql:
        floors["ReadAlias + the store's SQL and commit"] = alias + sql if alias else None
    return floors


def rounds_of(name):
    """The provider's rounds that ran to the end, by round number."""
    return {int(k): v for k, v in reports[name].get("rounds", {}).items() if "failed" not in v}


def size_row(round_report, items):
    return next((s for s in round_report.get("sizes", []) if s["items"] == items), None)


def phase_value(round_report, items, phase):
    row = size_row(round_report, items)
    return row[phase]["median_ms"] if row and phase in row else None


def floor_value(round_report, items, phase):
    """The phase's floor in this round (ms), or None."""
    if phase not in FLOORS:
        return None
    trips, commits, sampled = FLOORS[phase]
    row = size_row(round_report, items)
    floor = (row or {}).get("floors", {}).get(sampled)
    if not floor:
        return None
    commit = floor.get("commit", round_report.get("commit_floor"))
    if commits and not commit:
        return None
    return trips * floor["roundtrip"]["median_ms"] + (commits * commit["median_ms"] if commits else 0)


def multiple(round_report, items, phase):
    value, floor = phase_value(round_report, items, phase), floor_value(round_report, items, phase)
    return value / floor if value is not None and floor else None


def memory_and_disk(name, items):
    """The provider's RSS after the stores and its data on disk at `items`, medians over rounds."""
    rows = [size_row(r, items) for r in rounds_of(name).values()]
    rows = [row for row in rows if row]
    if not rows:
        return None
    rss = spread(row.get("rss_kib") for row in rows)
    after = spread(row.get("rss_kib_after_delete") for row in rows)
    text = f"{name} RSS {rss['median'] / 1024:.1f} MiB after the stores" if rss else f"{name}"
    if after:
        text += f" ({after['median'] / 1024:.1f} after the deletes)"
    before = spread(row.get("rss_kib_before_search_all") for row in rows)
    peak = spread(row.get("rss_kib_search_all_peak") for row in rows)
    settled = spread(row.get("rss_kib_after_search_all") for row in rows)
    if before and settled:
        text += (f", search all: {before['median'] / 1024:.1f} MiB before"
                 + (f", {peak['median'] / 1024:.1f} at its peak" if peak else "")
                 + f", {settled['median'] / 1024:.1f} settled after ({(settled['median'] / before['median'] - 1) * 100:+.0f}%)")
    data = spread(row.get("data_bytes") for row in rows)
    if data:
        wal = spread(row.get("journal_bytes") for row in rows)
        text += f", data {data['median'] / 1024:.0f} KiB" + (f" (WAL {wal['median'] / 1024:.0f})" if wal and wal["median"] else "")
        if wal and wal["median"] is not None:
            file = data["median"] - wal["median"]
            text += f", the database file {file / 1024:.0f} KiB = {file / plaintext(items):.2f}x the plaintext"
    return text


def plaintext(items):
    return next(size_row(r, items)["plaintext_bytes"] for p in sized for r in rounds_of(p).values() if size_row(r, items))


lines = []
def say(text=""):
    lines.append(text)
    print(text)

info = machine()
say(f"machine: {info['cpu']}, {info['cores']} cores, Linux {info['kernel']}; {info['gnome_keyring']}; "
    f"KeePassXC {info['keepassxc']}; {info['date']}")
summary = {"phases": {}, "cpu": {}, "floors": {}, "targets": {}}
sized = [p for p in PROVIDERS if rounds_of(p)]
for name in PROVIDERS:
    for number, r in sorted(reports[name].get("rounds", {}).items()):
        if "failed" in r:
            say(f"{name}, round {number}: FAILED ({r['failed']})")
if sized:
    count = max(len(reports[p].get("rounds", {})) for p in sized)
    orders = {}
    for name in sized:
        for number, r in reports[name].get("rounds", {}).items():
            orders.setdefault(int(number), []).append((r.get("position", 0), name))
    say(f"method: {count} round(s), each provider on its own private bus with a fresh HOME, one after the other, "
        f"the order turning each round ({'; '.join(' '.join(n for _, n in sorted(o)) for _, o in sorted(orders.items()))}). "
        "A figure is the median of the per-round medians, [min-max] of the per-round medians; 'x' is the multiple of "
        "the phase's floor (taken per round, then the median over rounds).")

    say()
    say("== floors on each provider's bus, ms (median [min-max] over rounds)")
    say("provider | no-op round trip (floor service, sd-bus on one thread), next to the phases | at the start | "
        "floor service Peer.Ping (answered by sd-bus) | provider's own Peer.Ping (reference only) | "
        "durable commit (SQLite WAL, synchronous=FULL), next to the phases | before the round")
    say("(next to the phases: the spread is over every phase's floor in every round)")
    for name in sized:
        rs = rounds_of(name).values()
        beside = [f for r in rs for s in r.get("sizes", []) for f in s.get("floors", {}).values()]
        f = {"noop_phases": spread(f["roundtrip"]["median_ms"] for f in beside),
             "noop": spread(r["floor_service"]["noop"]["median_ms"] for r in rs),
             "ping": spread(r["floor_service"]["ping"]["median_ms"] for r in rs),
             "provider_ping": spread(r.get("provider_ping", {}).get("median_ms") for r in rs),
             "commit_phases": spread(f["commit"]["median_ms"] for f in beside if "commit" in f),
             "commit": spread(r["commit_floor"]["median_ms"] for r in rs)}
        summary["floors"][name] = f
        say(f"{name} | {show(f['noop_phases'], 3)} | {show(f['noop'], 3)} | {show(f['ping'], 3)} | "
            f"{show(f['provider_ping'], 3)} | {show(f['commit_phases'], 3)} | {show(f['commit'], 3)}")
    say("phase floors: store and replace 1 round trip + 1 commit; lookup 2 round trips; delete (libsecret's clear) "
        "2 round trips + 1 commit; library set 2 + 1 commit; library get 2. The round trip is the floor service's "
        "no-op and the commit bench/commit-floor.py's, both timed right before and right after the phase; the round trips are libsecret's against secretd and gnome-keyring "
        "(KeePassXC answers CreateItem and Delete with a prompt: libsecret then calls Prompt, makes 9 calls to the "
        "bus daemon and waits for the Completed signal; COUNT_CALLS=yes bench/run.sh counts them, bench/README.md).")

    sizes = sorted({s["items"] for p in sized for r in rounds_of(p).values() for s in r.get("sizes", [])})
    for items in sizes:
        say()
        say(f"== {items:,} items: ms, median [min-max] over rounds, then x its floor")
        say("phase | " + " | ".join(sized) + " | secretd slower than a peer")
        for phase in PHASES:
            cells, row_summary = [], {}
            for name in sized:
                rs = rounds_of(name)
                value = spread(phase_value(r, items, phase) for r in rs.values())
                times = spread(multiple(r, items, phase) for r in rs.values())
                floor = spread(floor_value(r, items, phase) for r in rs.values())
                if value:
                    row_summary[name] = {"ms": value, "floor_ms": floor, "floor_multiple": times}
                digits = 1 if value and value["median"] >= 100 else 2
                cells.append(show(value, digits) + (f" {times['median']:.2f}x" if times else ""))
            flags = []
            mine = row_summary.get("secretd")
            if mine:
                for peer, theirs in row_summary.items():
                    if peer == "secretd":
                        continue
                    both = [n for n in rounds_of("secretd") if n in rounds_of(peer)]
                    slower = sum(1 for n in both if (a := phase_value(rounds_of("secretd")[n], items, phase)) is not None
                                 and (b := phase_value(rounds_of(peer)[n], items, phase)) is not None and a > b)
                    if mine["ms"]["median"] > theirs["ms"]["median"]:
                        flags.append(f"SLOWER than {peer} ({mine['ms']['median']:.2f} vs {theirs['ms']['median']:.2f}; "
                                     f"in {slower}/{len(both)} rounds)")
                    elif slower:
                        flags.append(f"slower than {peer} in {slower}/{len(both)} rounds")
                row_summary["secretd_slower_than"] = flags
            if any(name in row_summary for name in sized):
                summary["phases"].setdefault(str(items), {})[phase] = row_summary
                say(f"{phase} | " + " | ".join(cells) + f" | {'; '.join(flags) or '-'}")
        say("memory and disk: " + "; ".join(filter(None, (memory_and_disk(name, items) for name in sized)))
            + f"; plaintext {plaintext(items) // 1024} KiB")

    say()
    say("== CPU per call: each provider's own user + system time (/proc/PID/stat, all its threads), ms, "
        "median [min-max] over rounds")
    say("provider | stores | CPU per store | lookups | CPU per lookup | floor service CPU per no-op | "
        "per Peer.Ping (sd-bus's own) | provider's own Peer.Ping | provider's ReadAlias | "
        "kernel CPU per durable commit | a store's SQL with its commit | a lookup's SQL | wall: store, lookup")
    for name in sized:
        rs = [r["cpu"] for r in rounds_of(name).values() if "cpu" in r]
        if not rs:
            continue
        c = {"stores": rs[0]["stores"], "lookups": rs[0]["lookups"],
             "store": spread(r.get("store_cpu_ms_per_call") for r in rs),
             "lookup": spread(r.get("lookup_cpu_ms_per_call") for r in rs),
             "floor_service": spread(r.get("floor_service_cpu_ms_per_call") for r in rs),
             "floor_service_ping": spread(r.get("floor_service_ping_cpu_ms_per_call") for r in rs),
             "provider_ping": spread(r.get("provider_ping_cpu_ms_per_call") for r in rs),
             "provider_read_alias": spread(r.get("provider_read_alias_cpu_ms_per_call") for r in rs),
             "commit_kernel": spread(r.get("commit_floor", {}).get("system_cpu_ms")
                                     for r in rounds_of(name).values() if "cpu" in r),
             "store_sql": spread(r.get("work_floor", {}).get("store_sql_cpu_ms") for r in rounds_of(name).values()),
             "lookup_sql": spread(r.get("work_floor", {}).get("lookup_sql_cpu_ms") for r in rounds_of(name).values()),
             "store_wall": spread(r["store"]["median_ms"] for r in rs),
             "lookup_wall": spread(r["lookup"]["median_ms"] for r in rs)}
        summary["cpu"][name] = c
        say(f"{name} | {c['stores']:,} | {show(c['store'], 3)} | {c['lookups']:,} | {show(c['lookup'], 3)} | "
            f"{show(c['floor_service'], 3)} | {show(c['floor_service_ping'], 3)} | {show(c['provider_ping'], 3)} | "
            f"{show(c['provider_read_alias'], 3)} | {show(c['commit_kernel'], 3)} | {show(c['store_sql'], 3)} | "
            f"{show(c['lookup_sql'], 3)} | {show(c['store_wall'])}, {show(c['lookup_wall'])}")

    if "secretd" in sized:
        say()
        say("== secretd against issue 20's targets")
        targets = summary["targets"]
        for phase, bound in FLOOR_TARGETS.items():
            results = []
            for items in sizes:
                times = summary["phases"].get(str(items), {}).get(phase, {}).get("secretd", {}).get("floor_multiple")
                if times:
                    met = times["median"] <= bound
                    targets[f"{phase}_{items}"] = {"target": f"<= {bound}x floor", "value": times, "met": met}
                    results.append(f"{items:,}: {show(times, 2, 'x')} {'met' if met else 'NOT MET'}")
            say(f"{phase} <= {bound}x its floor: " + ", ".join(results))
        cpu = summary["cpu"].get("secretd")
        if cpu:
            for phase, bound in CPU_TARGETS.items():
                if cpu[phase]:
                    met = cpu[phase]["median"] <= bound
                    targets[f"cpu_{phase}"] = {"target": f"<= {bound} ms", "value": cpu[phase], "met": met}
                    floors = cpu_floors(cpu, phase)
                    targets[f"cpu_{phase}"]["floors"] = floors
                    below = [f"{what} {value:.3f} ms" for what, value in floors.items() if value is not None and value > bound]
                    known = [(what, value) for what, value in floors.items() if value is not None]
                    # The highest floor: what the target leaves for the rest of the work, and what secretd spends on it.
                    room = ""
                    if known and not below:
                        what, value = max(known, key=lambda pair: pair[1])
                        room = (f"; its floor here, {what}, is {value:.3f} ms: the target leaves {bound - value:.3f} ms "
                                f"for the rest of the work, on which secretd spends {cpu[phase]['median'] - value:.3f}")
                    say(f"CPU per {phase} <= {bound} ms: {show(cpu[phase], 3)} ms over {cpu[phase + 's']:,} calls: "
                        f"{'met' if met else 'NOT MET'}"
                        + (f"; the target is below its floor here: {', '.join(below)}" if below else room))
        conc = rounds_of("secretd").get(min(rounds_of("secretd"), default=0), {}).get("concurrency", {})
        one, eight = conc.get("stores_per_second_1"), conc.get("stores_per_second_8")
        if one and eight:
            multiple, ceiling = eight / one, concurrency_ceiling(conc, info["cores"])
            met = multiple >= CONCURRENCY_TARGET
            targets["concurrency_8"] = {"target": f">= {CONCURRENCY_TARGET}x one client", "value": round(multiple, 3),
                                        "ceiling": round(ceiling, 3) if ceiling else None, "met": met}
            clients8 = conc.get("clients_cpu_ms_per_store_8")
            say(f"8 clients >= {CONCURRENCY_TARGET}x one: {multiple:.2f}x {'met' if met else 'NOT MET'}"
                + (f"; ceiling here {ceiling:.2f}x ({info['cores']} CPUs x one client's {1000 / one:.3f} ms per store "
                   f"/ {conc['cpu_ms_per_store_8']:.3f} ms of CPU per store in all processes with 8"
                   + (f", {clients8:.3f} of it in the clients" if clients8 is not None else "") + ")" if ceiling else "")
                + ("; the target is above the ceiling here" if ceiling and ceiling < CONCURRENCY_TARGET else ""))
        slower = [f"{items} items {phase}: {'; '.join(row['secretd_slower_than'])}"
                  for items, phases in summary["phases"].items() for phase, row in phases.items()
                  if any(flag.startswith("SLOWER") for flag in row.get("secretd_slower_than", []))]
        targets["no_phase_slower_than_a_peer"] = {"met": not slower, "slower": slower}
        say("no phase slower than any peer: " + ("met" if not slower else "NOT MET: " + " | ".join(slower)))
        for mode, nw in no_work.items():
            floor, lookup = nw["roundtrip_floor"]["median_ms"], nw["lookup"]["median_ms"]
            say(f"a provider that does no work, answering {'on its GLib main loop' if mode == 'main-loop' else 'in GDBus’s thread'}: "
                f"lookup {lookup:.3f} ms = {lookup / (2 * floor):.2f}x its floor (no-op round trip {floor:.3f} ms, once before the rounds)")
        s = {n: r for n, r in rounds_of("secretd").items()}
        first, last = sizes[0], sizes[-1]
        if first != last:
            for phase in ("store", "lookup"):
                ratios = spread(phase_value(r, last, phase) / phase_value(r, first, phase) for r in s.values()
                                if phase_value(r, last, phase) and phase_value(r, first, phase))
                say(f"flat in N: {phase} at {last:,} / at {first:,} items: {show(ratios, 2, 'x')}")
        ratio = spread(phase_value(r, last, "secretctl_get_process") / phase_value(r, last, "secret_tool_lookup_process")
                       for r in s.values() if phase_value(r, last, "secretctl_get_process") and phase_value(r, last, "secret_tool_lookup_process"))
        if ratio:
            say(f"secretctl get / secret-tool lookup (whole processes, {last:,} items): {show(ratio, 2, 'x')}")

    say()
    say("== the rest, per provider (unlock and the concurrent clients: round 1 only)")
    for name in sized:
        rs = rounds_of(name)
        startup = spread(r.get("startup_to_name_ms") for r in rs.values())
        first = rs.get(min(rs))
        unlock = first.get("unlock", {}).get("median_ms")
        say(f"{name}: start to name owned {show(startup, 0)} ms (unlock included); unlock "
            f"{fmt(unlock) + ' ms' if unlock is not None else 'not measured (no unlock with a password over D-Bus)'}")
        conc = first.get("concurrency", {})
        if conc:
            one, eight = conc.get("stores_per_second_1"), conc.get("stores_per_second_8")
            say(f"  stores/s ({conc.get('stores_per_client', 300)} stores per client): 1 client {fmt(one)}, "
                f"8 clients {fmt(eight)} ({fmt(eight / one if one else None)}x)")
            for n in (1, 8):
                busy = conc.get(f"cpu_busy_fraction_{n}")
                if busy is not None:
                    say(f"  {n} client{'s' if n > 1 else ''}: machine CPUs {busy * 100:.0f}% busy; CPU per store "
                        f"{ms(conc.get(f'cpu_ms_per_store_{n}'))} ms in all processes: "
                        f"{ms(conc.get(f'clients_cpu_ms_per_store_{n}'))} in the clients, "
                        f"{ms(conc.get(f'bus_cpu_ms_per_store_{n}'))} in the bus, "
                        f"{ms(conc.get(f'provider_cpu_ms_per_store_{n}'))} in the provider")

def mib(kib):
    return "-" if kib is None else f"{kib / 1024:.1f}"


# What secretd must do with its memory in each scenario, judged on the RSS once settled after
# the clients left (bench/README.md, "Memory"): the thresholds the tests asserted before they
# moved here. gnome-keyring's figures are a peer's, judged by nothing.
EXPECTATIONS = {
    "sessions": ("after the hoarder left: within 8 MiB of before, and no higher than max(peak, before + 1 MiB)",
                 lambda r: r["settled"] - r["before"] <= 8 * 1024 and r["settled"] <= max(r["peak"], r["before"] + 1024)),
    "flood": ("peak under 150 MiB above before; after: under 32 MiB above before",
              lambda r: r["peak"] - r["before"] < 150 * 1024 and r["settled"] - r["before"] < 32 * 1024),
    "load": ("after: at most 10% above before", lambda r: r["settled"] <= r["before"] * 1.10),
}


def scenario_notes(scenario, m):
    """What the clients saw, in a few words."""
    if scenario == "sessions":
        return (f"{m.get('opened')} opened in {fmt(m.get('seconds'))} s, {m.get('usable')} still usable, "
                f"errors {','.join(e.rsplit('.', 1)[-1] for e in m.get('errors', [])) or 'none'}")
    if scenario == "flood":
        victim = m.get("victim", {})
        sent = "/".join(str(f.get("sent", "?")) for f in m.get("flooders", []))
        refused = sum(f.get("outcomes", {}).get("org.freedesktop.DBus.Error.LimitsExceeded", 0) for f in m.get("flooders", []))
        replies = sum(f.get("outcomes", {}).get("reply", 0) for f in m.get("flooders", []))
        stopped = f"; flooders stopped at the RSS ceiling after {m['flooders_stopped_at_ceiling_s']} s" if "flooders_stopped_at_ceiling_s" in m else ""
        return (f"victim {victim.get('operations', '-')} operations, {victim.get('failure_count', len(victim.get('failures', [])))} failures, "
                f"latency median/p95/max {victim.get('median_ms', '-')}/{victim.get('p95_ms', '-')}/{victim.get('max_ms', '-')} ms; "
                f"sent (reading/deaf/silent) {sent}, the reading one got {replies} replies and {refused} LimitsExceeded; "
                f"clients refused by the quota {m.get('quota_refused_clients', '-')}"
                + (" (cut off)" if m.get("cut_off") else "") + stopped)
    return (f"{m.get('completed')}/{m.get('clients')} clients x {m.get('operations_per_client')} in {fmt(m.get('seconds'))} s, "
            f"{m.get('failures')} failures, {m.get('locked_refusals')} refusals while locked"
            + (f" (first: {m['first_failures'][:2]})" if m.get("first_failures") else "")
            + (", cut off" if m.get("cut_off") else "") + (f", locker exit {m['locker_exit_status']}" if m.get("locker_exit_status") else ""))


def memory_tables(reports):
    """Prints the memory scenarios' table; returns secretd's verdicts."""
    rows = [(name, scenario, m) for name, report in reports.items() for scenario, m in report.get("memory", {}).items()]
    if not rows:
        return {}
    verdicts = {}
    say()
    say("== memory: the provider's RSS in MiB before, at its peak and after the clients left (1 s, 3 s, settled)")
    say("scenario | provider | before | peak | after 1 s | after 3 s | settled (stable from s) | settled - before | secretd's expectation | the clients")
    for name, scenario, m in sorted(rows, key=lambda row: (list(EXPECTATIONS).index(row[1]), row[0])):
        r = m.get("rss_kib", {})
        verdict = "peer figure"
        if name == "secretd" and scenario in EXPECTATIONS and all(k in r for k in ("before", "peak", "settled")):
            ok = EXPECTATIONS[scenario][1](r)
            verdict = "met" if ok else "NOT MET"
            verdicts[scenario] = {"expectation": EXPECTATIONS[scenario][0], "met": ok}
        since = r.get("settled_from_s")
        settled = (f"{mib(r.get('settled'))} ({'-' if since is None else f'{since:.1f}'}"
                   f"{'' if r.get('settled_in_time', True) else ', not settled'})")
        growth = mib(r["settled"] - r["before"]) if "settled" in r and "before" in r else "-"
        label = scenario + (f" ({fmt(m.get('seconds'))} s)" if scenario == "flood" else "")
        say(f"{label} | {name} | {mib(r.get('before'))} | {mib(r.get('peak'))} | {mib(r.get('after_1s'))} | "
            f"{mib(r.get('after_3s'))} | {settled} | {growth} | {verdict} | {scenario_notes(scenario, m)}")
    for scenario, (text, _) in EXPECTATIONS.items():
        if scenario in verdicts:
            say(f"secretd, {scenario}: {text}: {'met' if verdicts[scenario]['met'] else 'NOT MET'}")
    return verdicts


memory = memory_tables(reports)
json.dump({"machine": info, "no_work_provider": no_work, "providers": reports, "summary": summary,
           "memory_expectations": memory},
          open(out, "w"), indent=1, sort_keys=True)
print(f"\nJSON report: {out}")
