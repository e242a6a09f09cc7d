#!/bin/sh
# Bulk operations at N items (default 100,000; issue 51, point 6), each secretd with a fresh
# HOME, data directory and private bus. Times, in seconds, with the peak RSS (MiB) of secretd
# (VmHWM, reset before each step through /proc/PID/clear_refs) and of secretctl (GNU time):
#   - the floor: the store's own insert of the same N items, one transaction per 1,000
#     (keychain-store-floor, no D-Bus), in the same run;
#   - secretctl import of a browser's CSV of N rows, into a fresh secretd;
#   - secretctl export of the result (secretctl's own sealed format);
#   - secretctl list --json, search --attr (every item, as JSON) and search TEXT --json;
#   - secretctl import of that export, into a second fresh secretd.
# It fails unless both secretd end with all N items.
#   bench/bulk.sh [N]          BIN=... (default: the release build, swift build -c release --show-bin-path)
set -eu
cd "$(dirname "$0")/.."
count=${1:-100000}
bin=${BIN:-$(swift build -c release --show-bin-path)}
for tool in secretd secretctl keychain-store-floor; do
    [ -x "$bin/$tool" ] || { echo "bulk: $bin/$tool is missing (swift build -c release --product $tool)" >&2; exit 1; }
done
root=$(mktemp -d /tmp/secretd-bulk-bench.XXXXXX)
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null || true; done; rm -rf "$root"' EXIT INT TERM

now() { date +%s.%N; }
seconds() { echo "$2 - $1" | bc; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# shellcheck source=bench-secretd.sh
. bench/bench-secretd.sh

# step NAME MACHINE COMMAND...: runs secretctl's COMMAND as MACHINE, stdin from $input (or
# /dev/null), stdout to /dev/null; prints the time and both peaks.
step() {
    name=$1 machine=$2
    shift 2
    pid=$(cat "$root/$machine/pid")
    echo 5 >"/proc/$pid/clear_refs"
    cpu0=$(cpu "$pid")
    t0=$(now)
    on "$machine" /usr/bin/time -f '%M %U %S' -o "$root/time.out" "$bin/secretctl" "$@" <"${input:-/dev/null}" >"$root/out" 2>"$root/err" \
        || { echo "bulk: secretctl $* failed:" >&2; cat "$root/err" >&2; exit 1; }
    t1=$(now)
    cpu1=$(cpu "$pid")
    server=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status")
    set -- $(tail -n 1 "$root/time.out")
    printf '  %-32s %7.2f s  secretd: peak %6s MiB, CPU %6.2f s  secretctl: peak %6s MiB, CPU %6.2f s\n' "$name" \
        "$(seconds "$t0" "$t1")" "$(mib "$server")" "$(seconds "$cpu0" "$cpu1")" "$(mib "$1")" "$(echo "$2 + $3" | bc)"
}

cpu() {  # PID: its user and system CPU so far, in seconds
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"
}

items() {  # MACHINE: how many internet passwords it holds (secretctl status counts them one by one)
    on "$1" "$bin/secretctl" search --attr xdg:schema=org.gnome.keyring.NetworkPassword --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'
}

# The CSV: the rows keychain-store-floor inserts (label, host, user, a 20-byte password).
python3 - "$count" >"$root/items.csv" <<'PY'
import sys
print("name,url,username,password")
for i in range(int(sys.argv[1])):
    n = "%06d" % i
    print(f"site {n},https://host{n}.example.com/,user{n},pw-{n}-abcdefghij")
PY

printf 'bulk operations on %s items (bin %s, %s)\n' "$count" "$bin" "$(date -u '+%Y-%m-%d %H:%M UTC')"
floor=$(/usr/bin/time -f '%U %S' -o "$root/time.out" "$bin/keychain-store-floor" "$root/floor" "$count" 1000 \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])')
set -- $(tail -n 1 "$root/time.out")
printf '  %-32s %7.2f s  CPU %.2f s (the store alone, one transaction per 1,000 items)\n' "floor: Store insert" "$floor" \
    "$(echo "$1 + $2" | bc)"

start_bench_secretd a
input="" step "import CSV" a import "$root/items.csv"
sed 's/^/    /' "$root/out"
[ "$(items a)" = "$count" ] || { echo "bulk: the CSV import left $(items a) items, not $count" >&2; exit 1; }
printf 'export-passphrase\n' >"$root/passphrase"
input="$root/passphrase" step "export" a export "$root/items.export"
input="" step "list --json" a list --json
input="" step "search --attr ... --json (all)" a search --attr xdg:schema=org.gnome.keyring.NetworkPassword --json
lines=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$root/out")
[ "$lines" = "$count" ] || { echo "bulk: search --attr listed $lines items, not $count" >&2; exit 1; }
input="" step "search TEXT --json" a search host012345 --json

start_bench_secretd b
input="$root/passphrase" step "import export" b import "$root/items.export"
sed 's/^/    /' "$root/out"
[ "$(items b)" = "$count" ] || { echo "bulk: the export's import left $(items b) items, not $count" >&2; exit 1; }
