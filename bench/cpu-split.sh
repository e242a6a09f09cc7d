#!/bin/sh
# Where secretd's CPU per call goes, for issue 20's CPU targets (store <= 0.12 ms, lookup <= 0.05
# ms): secretd's own CPU per libsecret lookup and per libsecret store, as make bench measures it,
# then the share of it that the kernel and each library take (perf, 999 samples a second, no
# call graphs, in a second pass of the same calls), so the report can say how much of each call
# is outside secretd's own code and the allocator it drives.
#   bench/cpu-split.sh [CALLS]      default 10000 lookups and 10000 stores
# Needs the release build (make bench builds it, or: swift build -c release --static-swift-stdlib
# --disable-local-rpath), secret-tool, and perf (Debian: linux-perf); runs as a user who may
# profile their own processes (root, or kernel.perf_event_paranoid <= 1).
set -eu
cd "$(dirname "$0")/.."
calls=${1:-10000}
bin=${BIN:-$(swift build -c release --show-bin-path)}
command -v perf >/dev/null || { echo "cpu-split: perf is missing (Debian: apt-get install linux-perf)" >&2; exit 1; }
command -v secret-tool >/dev/null || { echo "cpu-split: secret-tool is missing (Debian: apt-get install libsecret-tools)" >&2; exit 1; }
for program in secretd keychain-bench; do
    [ -x "$bin/$program" ] || { echo "cpu-split: no $bin/$program; build the release first (make bench does)" >&2; exit 1; }
done
. scripts/exit-cleanup.sh
dir=$(mktemp -d /tmp/keychain-cpu-split.XXXXXX)
scratch=$dir
. scripts/private-bus.sh
private_home
export XDG_DATA_HOME="$HOME/.local/share"

printf 'bench-password' | "$bin/secretd" --unlock >"$dir/secretd.log" 2>&1 &
secretd=$!
pids="$pids $secretd"
wait_for_owner org.freedesktop.secrets "$dir/secretd.log" secretd
# keychain-bench --lookups times a lookup of the bench's item 0 and, beside it, a floor service.
"$bin/keychain-bench" --serve-floor >"$dir/floor.log" 2>&1 &
pids="$pids $!"
wait_for_owner org.keychain.BenchFloor "$dir/floor.log" floor-service
printf 'secret-000000-00-xxxxxxxxxxxxxxx' | secret-tool store --label 'bench a000000' service bench account a000000
echo go | "$bin/keychain-bench" --store-worker warm-up 300 >/dev/null

# CPU time of every thread of secretd, in nanoseconds (schedstat: exact, not tick-sampled).
cpu_ns() { cat /proc/"$secretd"/task/*/schedstat | awk '{ total += $1 } END { printf "%.0f", total }'; }
run_calls() {  # $1: lookup or store, $2: a name for the store worker
    if [ "$1" = lookup ]; then
        "$bin/keychain-bench" --lookups "$calls" >/dev/null || { echo "cpu-split: the looking-up client failed" >&2; exit 1; }
    else
        echo go | "$bin/keychain-bench" --store-worker "$2" "$calls" >/dev/null || { echo "cpu-split: the storing client failed" >&2; exit 1; }
    fi
}
for phase in lookup store; do
    before=$(cpu_ns)
    run_calls "$phase" "$phase-timed"
    after=$(cpu_ns)
    echo "$phase $before $after" >>"$dir/cpu"
    perf record -q -e cpu-clock -F 999 -p "$secretd" -o "$dir/$phase.perf" 2>"$dir/perf.log" &
    recorder=$!
    sleep 1
    run_calls "$phase" "$phase-profiled"
    kill -INT "$recorder"
    wait "$recorder" || true
    perf report -q -i "$dir/$phase.perf" --no-children --sort dso 2>/dev/null >"$dir/$phase.dso"
done

CALLS=$calls DIR=$dir python3 - <<'PY'
import os, re, sys
sys.path.insert(0, "bench")
from targets import CPU_TARGETS as targets
calls, folder = int(os.environ["CALLS"]), os.environ["DIR"]
# The lookup's CPU includes keychain-bench's 50 warm-up lookups; spread over the timed ones.
extra = {"lookup": 50, "store": 0}
# What secretd's own code cannot remove: the kernel (sockets, wake-ups, the commit's writes and
# fdatasync) and the C libraries it calls. secretd's binary holds its own code and the Swift
# runtime (linked statically); libc is counted with it, since most of its time is the allocator.
outside = {"[kernel.kallsyms]": "kernel", "libsqlite3": "SQLite", "libsystemd": "sd-bus",
           "libgcrypt": "libgcrypt", "libgpg-error": "libgcrypt", "libglib": "GLib", "[vdso]": "kernel"}
cpu = {}
for line in open(os.path.join(folder, "cpu")):
    phase, before, after = line.split()
    cpu[phase] = (int(after) - int(before)) / 1e6 / (calls + extra[phase])
print(f"secretd's CPU per libsecret call over {calls:,} calls each (schedstat), and where it goes (perf, a second pass)")
for phase in ("lookup", "store"):
    shares, own = {}, 0.0
    for line in open(os.path.join(folder, phase + ".dso")):
        match = re.match(r"\s*([\d.]+)%\s+(\S+)", line)
        if not match:
            continue
        share, dso = float(match[1]) / 100, match[2]
        part = next((name for prefix, name in outside.items() if dso.startswith(prefix)), None)
        if part:
            shares[part] = shares.get(part, 0) + share
        else:
            own += share
    total = cpu[phase]
    outside_ms = sum(shares.values()) * total
    parts = ", ".join(f"{name} {share * total:.3f} ({share:.0%})" for name, share in sorted(shares.items(), key=lambda x: -x[1]))
    print(f"{phase}: {total:.3f} ms; {parts}; secretd's own code, the Swift runtime and libc {own * total:.3f} ({own:.0%})")
    verdict = "above" if outside_ms > targets[phase] else "below"
    print(f"  the kernel and the C libraries alone: {outside_ms:.3f} ms, {verdict} the target of {targets[phase]} ms")
PY
