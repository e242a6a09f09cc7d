#!/bin/sh
# `make bench`: the same workload against secretd and gnome-keyring, each on its own private bus
# with a fresh HOME, then one report with the ratios (bench/README.md explains every figure).
#   bench/run.sh [SIZES...]       default: 100 1000 3000 10000 100000
#   gnome-keyring runs only the sizes up to 3000 (it rewrites its whole file on every change).
#   PROVIDERS="secretd" bench/run.sh 100 1000     only some providers
#   PARTS="memory" bench/run.sh                   only some parts (default: sizes memory):
#     sizes    the floors, the provider that does no work, and every size's phases
#     memory   the memory scenarios, each against a provider started for it alone
#   MEMORY_SCENARIOS="sessions flood load"        only some of them
#   FLOOD_SECONDS=10 LOAD_CLIENTS=16 LOAD_OPERATIONS=500    the memory scenarios' sizes
#   BENCH_JSON=path        where the JSON report goes (default bench/results.json when every part
#                          runs, bench/results/PARTS.json otherwise, so a partial run keeps the full report)
# Build first, as make bench does (release is what users run): swift build -c release --static-swift-stdlib --disable-local-rpath
set -eu
cd "$(dirname "$0")/.."
bin=${BIN:-$(swift build -c release --show-bin-path)}
sizes=${*:-100 1000 3000 10000 100000}
parts=${PARTS:-sizes memory}
if [ "$parts" = "sizes memory" ]; then
    out=${BENCH_JSON:-bench/results.json}
else
    out=${BENCH_JSON:-bench/results/$(echo "$parts" | tr ' ' '-').json}
    mkdir -p "$(dirname "$out")"
fi
has_part() { case " $parts " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# The memory scenarios' clients are the tests' (scripts/dbus-clients), run by Debian's Python.
if has_part memory && ! /usr/bin/python3 -c "import jeepney, secretstorage" 2>/dev/null; then
    echo "bench: /usr/bin/python3 cannot import jeepney and secretstorage (make deps installs python3-jeepney and python3-secretstorage)" >&2
    exit 1
fi
work=$(mktemp -d /tmp/keychain-bench.XXXXXX)
pids=""
# An interrupted run (Ctrl-C) leaves no bus or provider behind.
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
password=bench-password

# Starts provider $1 on a new private bus in "$dir", with a fresh HOME; sets pid (the
# provider's), data (its data directory) and startup_ms (start to name owned, unlock included).
start_provider() {
    mkdir -p "$dir"
    pids=""
    . scripts/private-bus.sh
    private_home
    export XDG_DATA_HOME="$HOME/.local/share" XDG_CONFIG_HOME="$HOME/.config"
    started=$(date +%s%N)
    if [ "$1" = secretd ]; then
        printf %s "$password" | "$bin/secretd" --unlock >"$dir/provider.log" 2>&1 &
        data="$XDG_DATA_HOME/secretd"
    else
        printf %s "$password" | gnome-keyring-daemon --foreground --components=secrets --unlock >"$dir/provider.log" 2>&1 &
        data="$XDG_DATA_HOME/keyrings"
    fi
    pid=$!
    pids="$pids $pid"
    wait_for_owner org.freedesktop.secrets "$dir/provider.log" "bench ($1)"
    startup_ms=$(( ($(date +%s%N) - started) / 1000000 ))
}

# Stops the provider and its bus.
stop_provider() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}

# Adds $3 (a JSON file) to the report of provider $1 (created when missing) under key $2, a
# dotted path ("memory.flood"); an empty key merges $3's own keys into the report.
add_to_report() {
    mkdir -p "$work/$1"
    python3 - "$work/$1/report.json" "$1" "$2" "$3" <<'PY'
import json, os, sys
path, name, key, part = sys.argv[1:5]
report = json.load(open(path)) if os.path.exists(path) else {"provider": name}
value = json.load(open(part))
if key:
    *parents, last = key.split(".")
    place = report
    for parent in parents:
        place = place.setdefault(parent, {})
    place[last] = value
else:
    report.update(value)
json.dump(report, open(path, "w"))
PY
}

report_args=""
if has_part sizes; then
    python3 bench/commit-floor.py "$work" >"$work/commit-floor.json"
    report_args="--commit-floor $work/commit-floor.json --no-work $work/no-work-main-loop.json $work/no-work-worker-thread.json"
    # A provider that does no work, answering on its main loop and in GDBus's thread: what GDBus and
    # libsecret alone cost a lookup (bench/README.md).
    for mode in main-loop worker-thread; do
        dir="$work/no-work-$mode"
        mkdir -p "$dir"
        pids=""
        . scripts/private-bus.sh
        private_home
        "$bin/keychain-bench" --serve-no-work "$mode" >"$dir/provider.log" 2>&1 &
        pids="$pids $!"
        wait_for_owner org.freedesktop.secrets "$dir/provider.log" "bench (no-work provider, $mode)"
        "$bin/keychain-bench" --lookups 3000 >"$work/no-work-$mode.json"
        stop_provider
    done
    for provider in ${PROVIDERS:-secretd gnome-keyring}; do
        these=""
        for size in $sizes; do
            if [ "$provider" = secretd ] || [ "$size" -le 3000 ]; then these="$these${these:+,}$size"; fi
        done
        [ -n "$these" ] || continue
        dir="$work/$provider-sizes"
        start_provider "$provider"
        echo "== $provider (sizes $these; started and unlocked in $startup_ms ms)" >&2
        "$bin/keychain-bench" --sizes "$these" --provider-pid "$pid" --data-dir "$data" --password "$password" \
            --secretctl "$bin/secretctl" >"$dir/sizes.json"
        echo "$startup_ms" >"$dir/startup.json"
        add_to_report "$provider" "" "$dir/sizes.json"
        add_to_report "$provider" startup_to_name_ms "$dir/startup.json"
        stop_provider
    done
fi
if has_part memory; then
    for provider in ${PROVIDERS:-secretd gnome-keyring}; do
        for scenario in ${MEMORY_SCENARIOS:-sessions flood load}; do
            dir="$work/$provider-memory-$scenario"
            start_provider "$provider"
            echo "== $provider: memory, $scenario (started and unlocked in $startup_ms ms)" >&2
            "$bin/keychain-bench" --memory "$scenario" --provider-pid "$pid" --password "$password" \
                --clients scripts/dbus-clients --flood-seconds "${FLOOD_SECONDS:-10}" \
                --load-clients "${LOAD_CLIENTS:-16}" --load-operations "${LOAD_OPERATIONS:-500}" >"$dir/memory.json"
            add_to_report "$provider" "memory.$scenario" "$dir/memory.json"
            if [ "$scenario" = flood ]; then
                # secretd logs once per client whose calls its quota refused (gnome-keyring has none).
                grep -c "refused with LimitsExceeded" "$dir/provider.log" >"$dir/quota.json" || true
                add_to_report "$provider" memory.flood.quota_refused_clients "$dir/quota.json"
            fi
            stop_provider
        done
    done
fi
reports=""
for provider in ${PROVIDERS:-secretd gnome-keyring}; do
    [ -f "$work/$provider/report.json" ] && reports="$reports $work/$provider/report.json"
done
# shellcheck disable=SC2086 # both lists are meant to split into words
python3 bench/report.py $report_args $reports --out "$out"
