# Sourced by run-secretd.sh and run-demo.sh: starts a private D-Bus session bus (no service
# directories, so nothing is auto-activated) with its socket in "$dir", exports
# DBUS_SESSION_BUS_ADDRESS, and adds the daemon to "$pids" for the caller's cleanup.
# Also defines has_owner NAME.
cat >"$dir/bus.conf" <<CONF
<busconfig>
  <type>session</type>
  <listen>unix:path=$dir/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/>
  </policy>
</busconfig>
CONF
dbus-daemon --config-file="$dir/bus.conf" --nofork --nopidfile 2>"$dir/bus.log" &
pids="$pids $!"
export DBUS_SESSION_BUS_ADDRESS="unix:path=$dir/bus"

has_owner() {
    dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner "string:$1" 2>/dev/null | grep -q "boolean true"
}
tries=0
until [ -S "$dir/bus" ] && has_owner org.freedesktop.DBus; do
    tries=$((tries + 1)); [ $tries -lt 100 ] || { echo "private-bus: dbus-daemon did not start" >&2; exit 1; }
    sleep 0.1
done
