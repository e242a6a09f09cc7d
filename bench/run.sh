#!/bin/sh
# `make bench`: the same workload against secretd, gnome-keyring and KeePassXC, each on its own
# private bus with a fresh HOME, in rounds (A B C, B C A, ...) so that the machine's noise
# hits every provider alike; then one report with the medians, their spread over the rounds, and
# each phase as a multiple of its floor (bench/README.md explains every figure).
#   bench/run.sh [SIZES...]       default: 100 1000 3000 10000 100000
#   PROVIDERS="secretd gnome-keyring" bench/run.sh 100 1000     only some providers
#   PROVIDERS="secretd secretd-no-audit" bench/run.sh 1000       what the audit trail costs: secretd
#                          beside itself with audit-keep = 0
#   ROUNDS=3               how many rounds (default 3); the order of the providers turns each round
#   gnome-keyring and KeePassXC are slow (gnome-keyring rewrites its whole file on every change,
#   KeePassXC searches every entry on every lookup): they run only the sizes up to SLOW_MAX_SIZE
#   (3000), the CPU phase over SLOW_CPU_CALLS (500) calls, and SLOW_CONCURRENCY_STORES (50)
#   stores per concurrent client. Every round of a provider is cut off after PROVIDER_TIMEOUT
#   (900) s and reported as failed; the other rounds and providers go on.
#   CPU_CALLS=10000        stores and lookups over which each provider's own CPU per call is measured
#   KEEPASSXC_AUTOSAVE=yes KeePassXC saves its file after every change (its default; 2.7.4 crashes
#                          under the bench's stream of stores then, see bench/README.md)
#   COUNT_CALLS=yes bench/run.sh 20    instead of timing: each provider's D-Bus calls per operation,
#                          from dbus-monitor on its bus during one untimed round (bench/count-calls.py)
#   PARTS="memory" bench/run.sh                   only some parts (default: sizes memory):
#     sizes    the floors, the provider that does no work, and every size's phases, in rounds
#     memory   the memory scenarios, each against a provider started for it alone (secretd
#              and gnome-keyring: KeePassXC cannot be unlocked without a person, which the load needs)
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
# An interrupted run (Ctrl-C) leaves no bus or provider behind.
. scripts/exit-cleanup.sh
work=$(mktemp -d /tmp/keychain-bench.XXXXXX)
scratch=$work
password=bench-password
providers=${PROVIDERS:-secretd gnome-keyring keepassxc}
rounds=${ROUNDS:-3}
slow_max_size=${SLOW_MAX_SIZE:-3000}
cpu_calls=${CPU_CALLS:-10000}
slow_cpu_calls=${SLOW_CPU_CALLS:-500}
slow_concurrency_stores=${SLOW_CONCURRENCY_STORES:-50}
provider_timeout=${PROVIDER_TIMEOUT:-900}
is_slow() { case $1 in secretd | secretd-no-audit) return 1 ;; *) return 0 ;; esac; }
for provider in $providers; do
    case $provider in
    secretd | secretd-no-audit | gnome-keyring) ;;
    keepassxc) command -v keepassxc >/dev/null && command -v keepassxc-cli >/dev/null || {
        echo "bench: keepassxc and keepassxc-cli not found (Debian package keepassxc; make bench installs it)" >&2; exit 1; } ;;
    *) echo "bench: unknown provider $provider (secretd, secretd-no-audit, gnome-keyring, keepassxc)" >&2; exit 1 ;;
    esac
done

# Starts the floor service (keychain-bench --serve-floor: a no-op method on the same bus as the
# provider, whose calls are the round-trip floor); sets floor_pid.
start_floor_service() {
    "$bin/keychain-bench" --serve-floor >"$dir/floor.log" 2>&1 &
    floor_pid=$!
    pids="$pids $floor_pid"
    wait_for_owner org.keychain.BenchFloor "$dir/floor.log" "bench (floor service)"
}

# Starts provider $1 on a new private bus in "$dir", with a fresh HOME, and the floor service
# on the same bus; sets pid (the provider's), data (its data directory, empty when there is
# nothing on disk to measure), unlock_password (empty when the provider cannot be unlocked
# with a password over D-Bus) and startup_ms (start to name owned, unlock included).
start_provider() {
    mkdir -p "$dir"
    pids=""
    . scripts/private-bus.sh
    private_home
    export XDG_DATA_HOME="$HOME/.local/share" XDG_CONFIG_HOME="$HOME/.config"
    start_floor_service
    unlock_password=$password
    case $1 in
    secretd | secretd-no-audit)
        # No automatic backup in the middle of a measurement (gnome-keyring takes none either);
        # secretd-no-audit: the same with its audit trail off, to show what the trail costs.
        mkdir -p "$XDG_CONFIG_HOME/secretd"
        printf 'backup-interval = off\n' >"$XDG_CONFIG_HOME/secretd/secretd.conf"
        [ "$1" = secretd-no-audit ] && printf 'audit-keep = 0\n' >>"$XDG_CONFIG_HOME/secretd/secretd.conf"
        started=$(date +%s%N)
        printf %s "$password" | "$bin/secretd" --unlock >"$dir/provider.log" 2>&1 &
        data="$XDG_DATA_HOME/secretd" ;;
    gnome-keyring)
        started=$(date +%s%N)
        printf %s "$password" | gnome-keyring-daemon --foreground --components=secrets --unlock >"$dir/provider.log" 2>&1 &
        data="$XDG_DATA_HOME/keyrings" ;;
    keepassxc)
        # A database with its root group exposed, opened with the password on stdin; no window
        # (Qt's offscreen platform), no dialog (bench/keepassxc/keepassxc.ini).
        data="$dir/keepassxc"
        mkdir -p "$data"
        printf '%s\n%s\n' "$password" "$password" |
            keepassxc-cli import -q -p -t 100 bench/keepassxc/bench.xml "$data/bench.kdbx" >"$dir/import.log" 2>&1 ||
            { echo "bench: keepassxc-cli import failed" >&2; cat "$dir/import.log" >&2; exit 1; }
        autosave=false
        [ "${KEEPASSXC_AUTOSAVE:-no}" = yes ] && autosave=true
        sed "s/^AutoSaveAfterEveryChange=.*/AutoSaveAfterEveryChange=$autosave/" bench/keepassxc/keepassxc.ini >"$dir/keepassxc.ini"
        # Without autosave nothing reaches the file during the run: no data size to report.
        [ $autosave = true ] || data=""
        unlock_password=""
        started=$(date +%s%N)
        printf '%s\n' "$password" | QT_QPA_PLATFORM=offscreen keepassxc --config "$dir/keepassxc.ini" \
            --localconfig "$dir/keepassxc-local.ini" --pw-stdin "$dir/keepassxc/bench.kdbx" >"$dir/provider.log" 2>&1 & ;;
    esac
    pid=$!
    pids="$pids $pid"
    wait_for_owner org.freedesktop.secrets "$dir/provider.log" "bench ($1)"
    startup_ms=$(( ($(date +%s%N) - started) / 1000000 ))
}

# Stops the provider and its bus; what has not exited 5 s after SIGTERM gets SIGKILL.
stop_provider() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    (sleep 5; for p in $pids; do kill -9 "$p" 2>/dev/null || true; done) &
    killer=$!
    # shellcheck disable=SC2086 # a list of pids
    wait $pids 2>/dev/null || true
    kill "$killer" 2>/dev/null || true
    wait "$killer" 2>/dev/null || true
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

if [ "${COUNT_CALLS:-no}" = yes ]; then
    items=$(echo "$sizes" | cut -d' ' -f1)
    for provider in $providers; do
        dir="$work/$provider-calls"
        start_provider "$provider"
        dbus-monitor --session >"$dir/monitor.log" 2>&1 &
        monitor=$!
        pids="$pids $monitor"
        sleep 0.5
        "$bin/keychain-bench" --sizes "$items" --provider-pid "$pid" --secretctl "$bin/secretctl" --extras no \
            >/dev/null 2>"$dir/bench.log" || { echo "bench: keychain-bench failed against $provider" >&2; tail -n 3 "$dir/bench.log" >&2; }
        sleep 0.5
        kill "$monitor" 2>/dev/null || true
        echo "== $provider: D-Bus calls per operation ($items items)"
        python3 bench/count-calls.py "$dir/monitor.log" "$items" 2>/dev/null
        stop_provider
    done
    exit 0
fi

report_args=""
if has_part sizes; then
    report_args="--no-work $work/no-work-main-loop.json $work/no-work-worker-thread.json"
    # A provider that does no work, answering on its main loop and in GDBus's thread: what GDBus and
    # libsecret alone cost a lookup (bench/README.md). Once, before the rounds.
    for mode in main-loop worker-thread; do
        dir="$work/no-work-$mode"
        mkdir -p "$dir"
        pids=""
        . scripts/private-bus.sh
        private_home
        start_floor_service
        "$bin/keychain-bench" --serve-no-work "$mode" >"$dir/provider.log" 2>&1 &
        pids="$pids $!"
        wait_for_owner org.freedesktop.secrets "$dir/provider.log" "bench (no-work provider, $mode)"
        "$bin/keychain-bench" --lookups 3000 >"$work/no-work-$mode.json"
        stop_provider
    done
    count=$(echo $providers | wc -w)
    round=1
    while [ $round -le "$rounds" ]; do
        # The order turns by one each round: A B C, B C A, C A B.
        set -- $providers
        skip=$(( (round - 1) % count ))
        while [ $skip -gt 0 ]; do first=$1; shift; set -- "$@" "$first"; skip=$((skip - 1)); done
        position=0
        for provider in "$@"; do
            position=$((position + 1))
            these=""
            for size in $sizes; do
                if ! is_slow "$provider" || [ "$size" -le "$slow_max_size" ]; then these="$these${these:+,}$size"; fi
            done
            [ -n "$these" ] || continue
            calls=$cpu_calls; per_client=300
            if is_slow "$provider"; then
                [ "$calls" -le "$slow_cpu_calls" ] || calls=$slow_cpu_calls
                per_client=$slow_concurrency_stores
            fi
            # Unlock and the concurrent clients run in the first round only.
            extras=no
            [ $round -eq 1 ] && extras=yes
            dir="$work/$provider-round-$round"
            start_provider "$provider"
            # The durable-commit floor, on the same disk, before this provider's round (keychain-bench
            # measures it again next to each phase that writes).
            python3 bench/commit-floor.py "$dir" >"$dir/commit-floor.json"
            echo "== round $round/$rounds: $provider (sizes $these; CPU over $calls calls; started in $startup_ms ms)" >&2
            status=0
            timeout "$provider_timeout" "$bin/keychain-bench" --sizes "$these" --provider-pid "$pid" --floor-pid "$floor_pid" --bus-pid "$bus_pid" \
                ${data:+--data-dir "$data"} ${unlock_password:+--password "$unlock_password"} --secretctl "$bin/secretctl" \
                --commit-floor-dir "$dir" --commit-floor bench/commit-floor.py \
                --extras $extras --cpu-stores "$calls" --cpu-lookups "$calls" --concurrency-stores "$per_client" \
                >"$dir/round.json" 2>"$dir/bench.log" || status=$?
            if [ $status -ne 0 ]; then
                alive=yes; kill -0 "$pid" 2>/dev/null || alive=no
                how="keychain-bench exit $status"
                [ $status -ne 124 ] || how="cut off after $provider_timeout s"
                echo "bench: round $round of $provider failed ($how; provider still running: $alive); the last lines of both:" >&2
                tail -n 3 "$dir/bench.log" >&2
                tail -n 3 "$dir/provider.log" >&2
            fi
            python3 - "$dir" "$startup_ms" "$position" "$status" "$provider_timeout" <<'PY2'
import json, os, sys
directory, startup, position, status, timeout = sys.argv[1:6]
path = os.path.join(directory, "round.json")
report = {}
if status == "0":
    report = json.load(open(path))
else:
    log = open(os.path.join(directory, "bench.log")).read().strip().splitlines()
    provider_log = open(os.path.join(directory, "provider.log"), errors="replace").read().strip().splitlines()
    report["failed"] = (f"cut off after {timeout} s" if status == "124" else f"keychain-bench exit {status}") + \
        (f": {log[-1]}" if log else "") + (f"; provider log: {provider_log[-1]}" if provider_log else "")
report.update({"commit_floor": json.load(open(os.path.join(directory, "commit-floor.json"))),
               "startup_to_name_ms": int(startup), "position": int(position)})
json.dump(report, open(path, "w"))
PY2
            add_to_report "$provider" "rounds.$round" "$dir/round.json"
            stop_provider
            # The floor of a store's and a lookup's database work, on a copy of secretd's database.
            if [ "$provider" = secretd ] && [ $status -eq 0 ] && [ -f "$data/secretd.sqlite3" ]; then
                python3 bench/work-floor.py "$data/secretd.sqlite3" >"$dir/work-floor.json"
                add_to_report "$provider" "rounds.$round.work_floor" "$dir/work-floor.json"
            fi
        done
        round=$((round + 1))
    done
fi
if has_part memory; then
    for provider in $providers; do
        if [ "$provider" = keepassxc ]; then
            echo "== keepassxc: no memory scenarios (the load locks and unlocks the keyring, which KeePassXC can do only through a person)" >&2
            continue
        fi
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
for provider in $providers; do
    [ -f "$work/$provider/report.json" ] && reports="$reports $work/$provider/report.json"
done
# shellcheck disable=SC2086 # both lists are meant to split into words
python3 bench/report.py $report_args $reports --out "$out"
