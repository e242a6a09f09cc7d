#!/usr/bin/env python3
"""Prints the tables of `make bench` and writes the merged JSON report.
usage: report.py [--commit-floor COMMIT_FLOOR.json] [--no-work MAIN_LOOP.json WORKER_THREAD.json] PROVIDER.json... --out RESULTS.json
A run of some parts only (bench/run.sh PARTS=...) leaves out the tables of the others."""
import json, platform, subprocess, sys, time

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
commit_floor_file = option("--commit-floor", 1)
commit_floor = json.load(open(commit_floor_file[0])) if commit_floor_file else None
reports = {r["provider"]: r for r in (json.load(open(f)) for f in args)}
PHASES = ["store", "lookup", "search_all_load_secrets", "replace", "delete", "keychain_set", "keychain_get",
          "secretctl_get_process", "secret_tool_lookup_process"]


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    cores = sum(1 for l in open("/proc/cpuinfo") if l.startswith("processor"))
    def version(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()[0]
        except Exception:
            return "?"
    return {"cpu": cpu, "cores": cores, "kernel": platform.release(),
            "gnome_keyring": version(["gnome-keyring-daemon", "--version"]), "date": time.strftime("%Y-%m-%d")}


def fmt(value):
    return "-" if value is None else (f"{value:.2f}" if isinstance(value, float) else str(value))


def size_row(report, items):
    return next((s for s in report["sizes"] if s["items"] == items), None)


lines = []
def say(text=""):
    lines.append(text)
    print(text)

info = machine()
say(f"machine: {info['cpu']}, {info['cores']} cores, Linux {info['kernel']}; {info['gnome_keyring']}; {info['date']}")
if commit_floor:
    say(f"floors: durable SQLite commit (WAL, synchronous=FULL) median {commit_floor['median_ms']:.3f} ms")
for name, report in reports.items():
    if "sizes" not in report:
        continue
    rt = report["roundtrip_floor"]["median_ms"]
    say()
    say(f"== {name}: D-Bus round trip median {rt:.3f} ms; started and unlocked in {report['startup_to_name_ms']} ms; "
        f"unlock {fmt(report.get('unlock', {}).get('median_ms'))} ms")
    say("items | " + " | ".join(f"{p} med/p99" for p in PHASES) + " | store first/last 100 med | RSS MiB (after delete) | data KiB (of which WAL; plain KiB)")
    for row in report["sizes"]:
        cells = [f"{fmt(row[p]['median_ms'])}/{fmt(row[p]['p99_ms'])}" if p in row else "-" for p in PHASES]
        rss = row.get("rss_kib")
        say(f"{row['items']} | " + " | ".join(cells)
            + f" | {fmt(row['store_first_100']['median_ms'])}/{fmt(row['store_last_100']['median_ms'])}"
            + f" | {fmt(rss / 1024 if rss else None)} ({fmt(after / 1024 if (after := row.get('rss_kib_after_delete')) else None)})"
            + f" | {fmt((row.get('data_bytes') or 0) // 1024)} ({fmt((row.get('journal_bytes') or 0) // 1024)}; {row['plaintext_bytes'] // 1024})")
    conc = report.get("concurrency", {})
    if conc:
        one, eight = conc.get("stores_per_second_1"), conc.get("stores_per_second_8")
        say(f"stores/s: 1 client {fmt(one)}, 8 clients {fmt(eight)} ({fmt(eight / one if one else None)}x)")
        for n in (1, 8):
            busy = conc.get(f"cpu_busy_fraction_{n}")
            if busy is not None:
                say(f"  {n} client{'s' if n > 1 else ''}: machine CPUs {busy * 100:.0f}% busy; CPU per store "
                    f"{fmt(conc.get(f'cpu_ms_per_store_{n}'))} ms in all processes, "
                    f"{fmt(conc.get(f'provider_cpu_ms_per_store_{n}'))} ms in the provider")

summary = {}
if "sizes" in reports.get("secretd", {}) and commit_floor:
    s = reports["secretd"]
    rt = s["roundtrip_floor"]["median_ms"]
    store_floor = rt + commit_floor["median_ms"]
    say()
    say(f"== secretd against its floors (store floor = 1 round trip + 1 commit = {store_floor:.3f} ms; lookup floor = 2 round trips = {2 * rt:.3f} ms)")
    for row in s["sizes"]:
        say(f"{row['items']}: store {row['store']['median_ms'] / store_floor:.2f}x floor, lookup {row['lookup']['median_ms'] / (2 * rt):.2f}x floor")
    for mode, nw in no_work.items():
        floor, lookup = nw["roundtrip_floor"]["median_ms"], nw["lookup"]["median_ms"]
        say(f"a provider that does no work, answering {'on its GLib main loop' if mode == 'main-loop' else 'in GDBus’s thread'}: "
            f"lookup {lookup:.3f} ms = {lookup / (2 * floor):.2f}x its floor (round trip {floor:.3f} ms)")
    if "main-loop" in no_work:
        ideal = no_work["main-loop"]["lookup"]["median_ms"]
        say("secretd lookup / no-work main-loop lookup: "
            + ", ".join(f"{row['items']}: {row['lookup']['median_ms'] / ideal:.2f}x" for row in s["sizes"]))
    # Until the first checkpoint (about 4 MiB of writes) the items sit in the WAL itself.
    in_file = [(row["items"], row["data_bytes"] - row["journal_bytes"]) for row in s["sizes"]
               if row.get("data_bytes") and row.get("journal_bytes") is not None and row["data_bytes"] - row["journal_bytes"] > row["plaintext_bytes"]]
    if in_file:
        say("database file without its WAL (a fixed overhead, about 4 MiB) / plaintext: "
            + ", ".join(f"{items}: {size / size_row(s, items)['plaintext_bytes']:.2f}x" for items, size in in_file))
    first, last = s["sizes"][0], s["sizes"][-1]
    say(f"flat in N: store {last['store']['median_ms'] / first['store']['median_ms']:.2f}x and lookup "
        f"{last['lookup']['median_ms'] / first['lookup']['median_ms']:.2f}x from {first['items']} to {last['items']} items")
    if "secretctl_get_process" in last:
        say(f"secretctl get / secret-tool lookup (whole processes): "
            f"{last['secretctl_get_process']['median_ms'] / last['secret_tool_lookup_process']['median_ms']:.2f}x")
    if "sizes" in reports.get("gnome-keyring", {}):
        g = reports["gnome-keyring"]
        say()
        say("== gnome-keyring median / secretd median (how many times faster secretd is; > 1 is faster)")
        say("items | " + " | ".join(PHASES))
        for row in g["sizes"]:
            mine = size_row(s, row["items"])
            if not mine:
                continue
            ratios = {p: row[p]["median_ms"] / mine[p]["median_ms"] for p in PHASES if p in row and p in mine}
            summary[str(row["items"])] = {p: round(v, 2) for p, v in ratios.items()}
            say(f"{row['items']} | " + " | ".join(fmt(ratios.get(p)) for p in PHASES))

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
json.dump({"machine": info, "commit_floor": commit_floor, "no_work_provider": no_work, "providers": reports,
           "gnome_keyring_over_secretd": summary, "memory_expectations": memory},
          open(out, "w"), indent=1, sort_keys=True)
print(f"\nJSON report: {out}")
