# Sourced by run-secretd.sh, run-demo.sh, leak-check.sh, bench/run.sh and bench/cpu-split.sh:
# starts a private D-Bus session bus (no service directories, so nothing is auto-activated; the
# limits of a real session bus, from session-bus-limits.conf) with its socket in "$dir",
# exports DBUS_SESSION_BUS_ADDRESS, sets bus_pid to the daemon's pid and adds it to "$pids" for
# the caller's cleanup (exit-cleanup.sh, sourced before).
# Also defines has_owner NAME, wait_for_owner NAME LOG WHO and private_home.
# The callers live in scripts/ or bench/, or run from the repository's root.
for limits in "$(dirname "$0")/session-bus-limits.conf" "$(dirname "$0")/../scripts/session-bus-limits.conf" \
    scripts/session-bus-limits.conf; do
    [ -f "$limits" ] && break
done
[ -f "$limits" ] || { echo "private-bus: session-bus-limits.conf not found" >&2; exit 1; }
limits="$(cd "$(dirname "$limits")" && pwd)/session-bus-limits.conf"
cat >"$dir/bus.conf" <<CONF
<busconfig>
  <type>session</type>
  <listen>unix:path=$dir/bus</listen>
  <auth>EXTERNAL</auth>
  <include>$limits</include>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/>
  </policy>
</busconfig>
CONF
dbus-daemon --config-file="$dir/bus.conf" --nofork --nopidfile 2>"$dir/bus.log" &
bus_pid=$!
pids="$pids $bus_pid"
export DBUS_SESSION_BUS_ADDRESS="unix:path=$dir/bus"

has_owner() {
    dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner "string:$1" 2>/dev/null | grep -q "boolean true"
}

# Waits up to 30 s for NAME to have an owner; otherwise prints "WHO: ...", then LOG, and exits 1.
wait_for_owner() {
    waited=0
    until has_owner "$1"; do
        waited=$((waited + 1))
        [ $waited -lt 3000 ] || { echo "$3: $1 did not appear on the bus" >&2; cat "$2" >&2; exit 1; }
        sleep 0.01
    done
}

# A throw-away HOME and XDG_RUNTIME_DIR (0700) inside "$dir", exported.
private_home() {
    export HOME="$dir/home" XDG_RUNTIME_DIR="$dir/run"
    mkdir -p "$HOME" "$XDG_RUNTIME_DIR"
    chmod 700 "$XDG_RUNTIME_DIR"
}
tries=0
until [ -S "$dir/bus" ] && has_owner org.freedesktop.DBus; do
    tries=$((tries + 1)); [ $tries -lt 100 ] || { echo "private-bus: dbus-daemon did not start" >&2; exit 1; }
    sleep 0.1
done
