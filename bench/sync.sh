#!/bin/sh
# Sync of N items (default 1000) between two secretd on one machine, each with its own data
# directory, HOME and private bus, through a bare repository on a local path (the transport's
# own cost: no network). Prints, in seconds: the first publish (sync init + sync now), the
# joining machine's first pull of everything, an idle round, a round with one change, a round
# with 100 changes and the other machine's round that takes them in; and beside them git's own
# floors: `git fast-import` alone writing as many blobs of the same size (random bytes, as
# sealed items are) into a fresh repository, and a commit of 100 changed blobs on top of that
# one by fast-import, pushed to a bare copy.
#   bench/sync.sh [N]           BIN=.build/release (default: swift build --show-bin-path)
set -eu
cd "$(dirname "$0")/.."
count=${1:-1000}
bin=${BIN:-$(swift build --show-bin-path)}
root=$(mktemp -d /tmp/secretd-sync-bench.XXXXXX)
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null || true; done; rm -rf "$root"' EXIT INT TERM

now() { date +%s.%N; }
seconds() { echo "$2 - $1" | bc; }
# timed VAR COMMAND...: runs COMMAND (its output dropped) and sets VAR to the seconds it took.
timed() {
    timed_var=$1
    shift
    timed_start=$(now)
    "$@" >/dev/null
    eval "$timed_var=\$(seconds \"\$timed_start\" \"\$(now)\")"
}
# logins_csv ROWS PASSWORD: a browser's CSV of ROWS logins site1..ROWS, passwords PASSWORD-N.
logins_csv() {
    echo "name,url,username,password"
    for i in $(seq "$1"); do echo "Site $i,https://site$i.example.com/,user$i,$2-$i"; done
}

# shellcheck source=bench-secretd.sh
. bench/bench-secretd.sh

start_bench_secretd a "sync-interval = 3600"
start_bench_secretd b "sync-interval = 3600"
git init --quiet --bare --initial-branch main "$root/remote.git"

# N items on A, imported in one call (a browser's CSV).
logins_csv "$count" password >"$root/items.csv"
on a "$bin/secretctl" import "$root/items.csv" >/dev/null

first_publish() {
    on a "$bin/secretctl" sync init "$root/remote.git"
    on a "$bin/secretctl" sync now
}
timed publish first_publish

device=$(on b "$bin/secretctl" sync join "$root/remote.git" | sed -n 's/^This machine is device \([0-9a-f]*\);.*/\1/p')
code=$(on b "$bin/secretctl" sync status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["code"])')
on a "$bin/secretctl" sync approve "$device" --code "$code" 2>/dev/null
timed pull on b "$bin/secretctl" sync now
timed idle on a "$bin/secretctl" sync now
printf 'changed' | on a "$bin/secretctl" set com.example.one edit >/dev/null
timed one on a "$bin/secretctl" sync now

# 100 changes: new passwords for 100 of the items (an import that replaces them); then the
# other machine takes them in.
changes=$((count < 100 ? count : 100))
logins_csv "$changes" changed >"$root/changes.csv"
on a "$bin/secretctl" import --replace "$root/changes.csv" >/dev/null
timed hundred on a "$bin/secretctl" sync now
timed hundred_in on b "$bin/secretctl" sync now
[ "$(on b secret-tool lookup server site1.example.com user user1)" = "changed-1" ] || { echo "the change did not reach the other machine" >&2; exit 1; }

received=$(on b "$bin/secretctl" status --json | python3 -c 'import json,sys; print(sum(c["items"] for c in json.load(sys.stdin)["collections"]))')
[ "$received" = $((count + 1)) ] || { echo "the new machine holds $received items, not $((count + 1))" >&2; exit 1; }
repo=$(du -sk "$root/remote.git" | cut -f1)

# fast_import_stream COUNT SIZE [PARENT]: a git fast-import stream of one commit on main (on
# PARENT when given) of COUNT files items/NNN of SIZE random bytes.
fast_import_stream() {
    python3 - "$@" <<'PY'
import os, sys
count, size = int(sys.argv[1]), int(sys.argv[2])
out = sys.stdout.buffer
out.write(b"commit refs/heads/main\ncommitter floor <floor@localhost> 0 +0000\ndata 5\nfloor\n")
if len(sys.argv) > 3:
    out.write(b"from %s\n" % sys.argv[3].encode())
for index in range(count):
    out.write(b"M 100644 inline items/%032x\ndata %d\n" % (index, size))
    out.write(os.urandom(size) + b"\n")
out.write(b"\n")
PY
}

# The floor: as many blobs of the items' mean size, in one commit, by git fast-import alone.
size=$(git -C "$root/remote.git" ls-tree -l main items/ | awk '{ total += $4 } END { printf "%d", total / NR }')
fast_import_stream "$count" "$size" >"$root/floor.stream"
git init --quiet --bare "$root/floor.git"
timed floor git -C "$root/floor.git" fast-import --quiet <"$root/floor.stream"

# git's floor of a round with 100 changes: a commit of 100 changed blobs on top of that one, by
# fast-import, pushed to a bare copy of the repository.
git clone --quiet --bare "$root/floor.git" "$root/floor-remote.git"
git -C "$root/floor.git" remote add origin "$root/floor-remote.git"
fast_import_stream "$changes" "$size" "refs/heads/main^0" >"$root/change.stream"
change_round() {
    git -C "$root/floor.git" fast-import --quiet <"$root/change.stream"
    git -C "$root/floor.git" push --quiet origin main
}
timed change_floor change_round

printf 'sync of %s items (bin %s)\n' "$count" "$bin"
printf '  first publish (init + now):  %6.2f s\n' "$publish"
printf '  first pull on a new machine: %6.2f s\n' "$pull"
printf '  idle round:                  %6.2f s\n' "$idle"
printf '  round with one change:       %6.2f s\n' "$one"
printf '  round with %s changes:      %6.2f s; the other machine takes them in: %.2f s\n' "$changes" "$hundred" "$hundred_in"
printf '  repository size:             %6s KiB\n' "$repo"
printf '  floor: git fast-import of %s blobs of %s bytes: %6.2f s (first publish %.2fx, first pull %.2fx)\n' \
    "$count" "$size" "$floor" "$(echo "$publish / $floor" | bc -l)" "$(echo "$pull / $floor" | bc -l)"
printf '  floor: a commit of %s changed blobs on it by git fast-import, pushed: %6.2f s\n' "$changes" "$change_floor"
