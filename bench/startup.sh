#!/bin/sh
# Start-up (issue 51, point 7): from D-Bus activation to the name owned and the first call
# answered, with a locked keyring of N items, for secretd and gnome-keyring in the same run.
# Each provider has its own private bus whose service directory holds only its
# org.freedesktop.secrets.service, and its own HOME with a login keyring of N items, filled once
# through D-Bus (bench/startup.py fill) by the provider itself started with --unlock, then
# stopped. Then, in rounds (the order turns each round), bench/startup.py times one
# Properties.Get(Service, Collections) sent while no provider runs: the bus starts the provider
# (as a desktop session does, with no password: the keyring stays locked), and the reply ends
# the figure. The provider is stopped (SIGTERM) before the next one. secretd is started with
# its systemd unit's environment (G_SLICE=always-malloc), as the bus has systemd start it once
# installed; secretd-SIZE-bare is the same started by a plain Exec= line (it then starts itself
# again, main.swift). After the rounds, SQLite's quick check of each secretd database alone,
# which secretd must make before it serves: the bound of its start at that size.
#   bench/startup.sh               ROUNDS=15, SECRETD_SIZES="3000 100000", PEER_SIZE=3000
#   BIN=DIR                        secretd from DIR (default: the release build, which make bench builds:
#                                  swift build -c release --static-swift-stdlib --disable-local-rpath)
#   KEYRINGS=DIR                   keep the filled keyrings in DIR and use them again in later runs
#                                  (each is filled once; a start and a stop leave its items as they were)
#   BARE=no                        without secretd-SIZE-bare: the first size started by a plain Exec= line,
#                                  not with its systemd unit's environment (see below)
#   COMPARE=DIR                    also secretd from DIR (another build) on a copy of each size's keyring,
#                                  as secretd-SIZE-compare, in the same rounds
#   FLOOR=no                       without the floor: a trivial C program (sd-bus) that owns the
#                                  name and answers the same call, activated the same way
# Prints each setup's median and 90th percentile in ms, and the ratios the issue sets, taken
# round by round (both figures of a ratio come from the same round).
set -eu
cd "$(dirname "$0")/.."
bin=${BIN:-$(swift build -c release --show-bin-path)}
rounds=${ROUNDS:-15}
secretd_sizes=${SECRETD_SIZES-3000 100000}
peer_size=${PEER_SIZE:-3000}
floor=${FLOOR:-yes}
bare=${BARE:-yes}
compare=${COMPARE:-}
password=bench-password
[ -x "$bin/secretd" ] || { echo "startup: no $bin/secretd; build the release first (see above)" >&2; exit 1; }
command -v gnome-keyring-daemon >/dev/null || { echo "startup: no gnome-keyring-daemon (Debian package gnome-keyring)" >&2; exit 1; }
/usr/bin/python3 -c "import jeepney" 2>/dev/null || { echo "startup: /usr/bin/python3 cannot import jeepney (python3-jeepney)" >&2; exit 1; }
limits="$(pwd)/scripts/session-bus-limits.conf"
# shellcheck source=scripts/exit-cleanup.sh
. scripts/exit-cleanup.sh
work=$(mktemp -d /tmp/keychain-startup.XXXXXX)
# shellcheck disable=SC2034 # exit-cleanup.sh removes it
scratch=$work
setups_dir=${KEYRINGS:-$work}

# Makes setup $1 (a directory of its own in $work) whose bus activates the command $2, and
# starts its bus; the bus, and so every provider it starts, has the setup's HOME and XDG
# directories. Sets address.
start_bus() {
    setup="$setups_dir/$1"
    rm -f "$setup/bus"
    mkdir -p "$setup/home/.local/share" "$setup/home/.config" "$setup/run" "$setup/services"
    chmod 700 "$setup/run"
    printf '[D-BUS Service]\nName=org.freedesktop.secrets\nExec=%s\n' "$2" >"$setup/services/org.freedesktop.secrets.service"
    cat >"$setup/bus.conf" <<CONF
<busconfig>
  <type>session</type>
  <listen>unix:path=$setup/bus</listen>
  <auth>EXTERNAL</auth>
  <servicedir>$setup/services</servicedir>
  <include>$limits</include>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/>
  </policy>
</busconfig>
CONF
    HOME="$setup/home" XDG_DATA_HOME="$setup/home/.local/share" XDG_CONFIG_HOME="$setup/home/.config" \
        XDG_RUNTIME_DIR="$setup/run" dbus-daemon --config-file="$setup/bus.conf" --nofork --nopidfile 2>"$setup/bus.log" &
    pids="$pids $!"
    address="unix:path=$setup/bus"
    tries=0
    until [ -S "$setup/bus" ]; do
        tries=$((tries + 1)); [ $tries -lt 100 ] || { echo "startup: dbus-daemon did not start" >&2; cat "$setup/bus.log" >&2; exit 1; }
        sleep 0.05
    done
}

# Runs "$@" in setup $1's environment.
in_setup() {
    setup="$setups_dir/$1"
    shift
    HOME="$setup/home" XDG_DATA_HOME="$setup/home/.local/share" XDG_CONFIG_HOME="$setup/home/.config" \
        XDG_RUNTIME_DIR="$setup/run" DBUS_SESSION_BUS_ADDRESS="unix:path=$setup/bus" "$@"
}

# Fills setup $1 with $2 items: its provider, started with the password on standard input by
# the rest of the arguments, stores them, then is stopped (SIGTERM), which writes everything out.
fill() {
    name=$1 count=$2
    shift 2
    setup="$setups_dir/$name"
    if [ -f "$setup/filled" ]; then
        echo "$name: $count items, kept from an earlier run ($(du -sh "$setup/home/.local/share" | cut -f1))" >&2
        return 0
    fi
    started=$(date +%s)
    # env, not in_setup: $! is then the provider's own pid (env executes it).
    printf %s "$password" | env HOME="$setup/home" XDG_DATA_HOME="$setup/home/.local/share" \
        XDG_CONFIG_HOME="$setup/home/.config" XDG_RUNTIME_DIR="$setup/run" \
        DBUS_SESSION_BUS_ADDRESS="unix:path=$setup/bus" "$@" >"$setup/fill.log" 2>&1 &
    filler=$!
    tries=0
    until in_setup "$name" dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q "boolean true"; do
        tries=$((tries + 1)); [ $tries -lt 600 ] || { echo "startup: $name did not start" >&2; cat "$setup/fill.log" >&2; exit 1; }
        sleep 0.05
    done
    in_setup "$name" /usr/bin/python3 -B bench/startup.py fill "$count"
    kill "$filler"
    wait "$filler" || true
    touch "$setup/filled"
    echo "$name: $count items stored in $(($(date +%s) - started)) s ($(du -sh "$setup/home/.local/share" | cut -f1))" >&2
}

setups=""
bare_size=""
for size in $secretd_sizes; do
    # As installed, the bus asks systemd to start secretd.service, whose environment has
    # G_SLICE=always-malloc; without it secretd starts itself again to have it (main.swift).
    # There is no systemd here, so the bus starts it with that environment itself.
    start_bus "secretd-$size" "/usr/bin/env G_SLICE=always-malloc $bin/secretd --foreground"
    fill "secretd-$size" "$size" "$bin/secretd" --foreground --unlock
    setups="$setups secretd-$size=$address"
    # The same keyring (a copy) served by another build, to compare two builds in one run.
    if [ -n "$compare" ]; then
        start_bus "secretd-$size-compare" "/usr/bin/env G_SLICE=always-malloc $compare/secretd --foreground"
        rm -rf "${setup:?}/home"
        cp -a "$setups_dir/secretd-$size/home" "$setup/home"
        setups="$setups secretd-$size-compare=$address"
    fi
    # The first size once more, started bare (Exec=secretd), as a bus without systemd would.
    if [ "$bare" = yes ] && [ -z "$bare_size" ]; then
        bare_size=$size
        start_bus "secretd-$size-bare" "$bin/secretd --foreground"
        fill "secretd-$size-bare" "$size" "$bin/secretd" --foreground --unlock
        setups="$setups secretd-$size-bare=$address"
    fi
done
start_bus "gnome-keyring-$peer_size" "$(command -v gnome-keyring-daemon) --start --foreground --components=secrets"
fill "gnome-keyring-$peer_size" "$peer_size" gnome-keyring-daemon --foreground --components=secrets --unlock
setups="$setups gnome-keyring-$peer_size=$address"
if [ "$floor" = yes ]; then
    # The floor: what activation itself costs, with a program that does nothing else.
    # shellcheck disable=SC2046 # pkg-config's flags, one word each
    cc -O2 -o "$work/floor-provider" bench/floor-provider.c $(pkg-config --cflags --libs libsystemd)
    start_bus floor "$work/floor-provider"
    setups="$setups floor=$address"
fi

echo "timing $rounds rounds of:$setups" | sed 's/=[^ ]*//g' >&2
# shellcheck disable=SC2086 # a list of NAME=ADDRESS
/usr/bin/python3 -B bench/startup.py time "$rounds" $setups >"$work/figures.json"
# The quick check secretd makes before it serves, alone, on each size's database: a bound.
echo "{" >"$work/checks.json"
separator=""
for size in $secretd_sizes; do
    printf '%s"%s": ' "$separator" "$size" >>"$work/checks.json"
    /usr/bin/python3 -B bench/startup.py check "$setups_dir/secretd-$size/home/.local/share/secretd/secretd.sqlite3" "$rounds" >>"$work/checks.json"
    separator=","
done
echo "}" >>"$work/checks.json"
python3 - "$work/figures.json" "$secretd_sizes" "$peer_size" "$(date -u +%Y-%m-%d)" "$bin" "$work/checks.json" <<'PY'
import json, sys
figures = json.load(open(sys.argv[1]))
checks = json.load(open(sys.argv[6]))
sizes, peer = sys.argv[2].split(), sys.argv[3]
def rank(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(-(-len(ordered) * fraction // 1)) - 1))]
print("start-up: activation to the first call answered, locked keyring (%s, %s, %d rounds)"
      % (sys.argv[4], sys.argv[5], len(next(iter(figures.values())))))
print("%-22s %10s %10s %10s %10s" % ("", "median ms", "p90 ms", "min ms", "max ms"))
for name, values in figures.items():
    print("%-22s %10.1f %10.1f %10.1f %10.1f" % (name, rank(values, 0.5), rank(values, 0.9), min(values), max(values)))
def ratio(a, b, target, what):
    if a not in figures or b not in figures:
        return
    pairs = [x / y for x, y in zip(figures[a], figures[b])]
    median = rank(pairs, 0.5)
    verdict = ", target %.1fx: %s" % (target, "met" if median <= target else "missed") if target else ""
    print("%-44s %5.2fx (rounds %.2f-%.2f)%s" % (what, median, min(pairs), max(pairs), verdict))
ratio("secretd-3000", "gnome-keyring-" + peer, 1.2, "secretd 3,000 / gnome-keyring %s:" % peer)
ratio("secretd-100000", "secretd-3000", 1.5, "secretd 100,000 / secretd 3,000:")
for size in sizes:
    ratio("secretd-%s" % size, "secretd-%s-compare" % size, None, "secretd %s / the COMPARE build:" % size)
ratio("secretd-3000", "secretd-3000-bare", None, "secretd 3,000 / the same started bare:")
ratio("secretd-3000", "floor", None, "secretd 3,000 / floor:")
ratio("gnome-keyring-" + peer, "floor", None, "gnome-keyring %s / floor:" % peer)
for size, values in checks.items():
    print("SQLite's quick check alone, %s items: median %.1f ms, p90 %.1f ms" % (size, rank(values, 0.5), rank(values, 0.9)))
if "3000" in checks and "100000" in checks and "secretd-3000" in figures:
    bound = rank(checks["100000"], 0.5) / rank(figures["secretd-3000"], 0.5)
    print("the quick check at 100,000 alone / secretd's whole start at 3,000: %.2fx (the target: 1.5x)" % bound)
PY
