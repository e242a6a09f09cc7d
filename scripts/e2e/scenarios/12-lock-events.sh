# shellcheck shell=bash
# lock-on-screen-lock and lock-on-suspend: a screen lock and a suspend (logind's Lock and
# PrepareForSleep, from a stand-in where the container cannot) lock alice's keyring, an
# after-first-unlock item stays readable behind the screen lock, and a PIN opens it again.
# boot: second
# needs: users setup-system alice=1

# ---- locking on screen lock and on sleep, and the PIN after it (lock-on-screen-lock,
# lock-on-suspend). Root drives alice's open session: loginctl lock-session, systemctl suspend.

alice_state() { as_user alice secretctl status --json 2>/dev/null | state_from_json 2>/dev/null; }
wait_state() {
    local _ state
    for _ in $(seq 50); do
        state=$(alice_state)
        [ "$state" = "$1" ] && return 0
        sleep 0.2
    done
    echo "alice's login keyring is ${state:-unreachable}, expected $1"
    return 1
}
lock_config() {
    local dir=/home/alice/.config/secretd
    install -d -o alice -g alice -m 700 /home/alice/.config "$dir" &&
        printf 'lock-on-suspend = yes\nlock-on-screen-lock = yes\n' >"$dir/secretd.conf" &&
        chown alice:alice "$dir/secretd.conf" && chmod 600 "$dir/secretd.conf"
}
alice_session() { loginctl list-sessions --no-legend | awk '$3 == "alice" { print $1; exit }'; }
# A screen lock: logind sends Lock on the session's object. systemd 256 and later (Debian 13)
# refuse loginctl lock-session for a session without a display ("does not support lock screen");
# there logind is stood in for, as for the suspend below, and the stand-in also answers secretd's
# question whose session it is (its User property).
lock_screen() {
    local session path out rc
    session=$(alice_session)
    if ! out=$(loginctl lock-session "$session" 2>&1); then
        [[ $out == *"does not support lock screen"* ]] || { echo "$out"; return 1; }
        echo "note: loginctl lock-session: $out; logind's Lock comes from a stand-in"
        path=$(busctl call org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager GetSession s "$session" | cut -d'"' -f2)
        systemctl stop systemd-logind.service
        fake_lock "$path" "$(id -u alice)"
        rc=$?
        systemctl start systemd-logind.service
        [ $rc -eq 0 ] || { echo "the stand-in for logind failed"; return 1; }
    fi
    wait_state locked
}
fake_lock() {
    python3 - "$@" <<'PY'
import sys, time
from jeepney import DBusAddress, HeaderFields, MessageType, new_method_return, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection
path, uid = sys.argv[1], int(sys.argv[2])
conn = open_dbus_connection(bus="SYSTEM")
assert conn.send_and_get_reply(message_bus.RequestName("org.freedesktop.login1", 4)).body[0] == 1, "name taken"
conn.send(new_signal(DBusAddress(path, interface="org.freedesktop.login1.Session"), "Lock"))
deadline = time.monotonic() + 2
while (left := deadline - time.monotonic()) > 0:
    try:
        message = conn.receive(timeout=left)
    except TimeoutError:
        break
    if message.header.message_type == MessageType.method_call and message.header.fields.get(HeaderFields.member) == "Get":
        conn.send(new_method_return(message, "v", (("(uo)", (uid, "/org/freedesktop/login1/user/_%d" % uid)),)))
PY
}
pin_set() { printf '%s\n%s\n' "$PASSWORD_1" 4711 | as_user alice secretctl pin set --stdin; }
pin_unlock() { printf 4711 | as_user alice secretctl unlock --pin && wait_state unlocked; }
# A suspend: logind announces PrepareForSleep(true) before it sleeps. A container cannot sleep
# (logind: 'Sleep verb "suspend" not supported'), so there logind is stood in for: stopped for a
# moment while a stand-in owns its bus name on the system bus and announces the sleep and the
# wake-up, then started again (it keeps its sessions in /run).
fake_sleep() {
    python3 - <<'PY'
import time
from jeepney import DBusAddress, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection
conn = open_dbus_connection(bus="SYSTEM")
assert conn.send_and_get_reply(message_bus.RequestName("org.freedesktop.login1", 4)).body[0] == 1, "name taken"
manager = DBusAddress("/org/freedesktop/login1", interface="org.freedesktop.login1.Manager")
conn.send(new_signal(manager, "PrepareForSleep", "b", (True,)))
time.sleep(1)
conn.send(new_signal(manager, "PrepareForSleep", "b", (False,)))
time.sleep(0.2)
PY
}
suspend_locks() {
    local out
    if out=$(timeout 60 systemctl suspend 2>&1); then
        note "lock events: systemctl suspend: done"
    else
        note "lock events: systemctl suspend: $out; logind's PrepareForSleep comes from a stand-in"
        systemctl stop systemd-logind.service
        fake_sleep
        out=$?
        systemctl start systemd-logind.service
        [ $out -eq 0 ] || { echo "the stand-in for logind failed"; return 1; }
    fi
    wait_state locked
}
no_pin_in_journal() { ! journalctl --no-pager -o cat | grep -wF 4711; }
# An after-first-unlock item (a background job's token) and an ordinary one, then what the
# screen lock leaves readable: the first, without a prompt; the second fails at once (no pinentry).
store_classes() {
    printf sync-token | as_user alice secretctl set --accessible after-first-unlock com.example.sync job &&
        printf bank-pin | as_user alice secretctl set com.example.bank alice
}
background_reads_locked() {
    local out
    out=$(as_user alice secretctl get com.example.sync job) || { echo "secretctl get failed"; return 1; }
    [ "$out" = sync-token ] || { echo "got '$out'"; return 1; }
    if out=$(as_user alice timeout 20 secretctl get com.example.bank alice 2>&1); then
        echo "the when-unlocked item was readable while locked"
        return 1
    fi
    [ "$(alice_state)" = locked ] || { echo "the keyring is $(alice_state)"; return 1; }
}
lock_events() {
    local holder
    check "lock events: lock-on-suspend and lock-on-screen-lock set in alice's secretd.conf" lock_config
    ssh_password alice "$PASSWORD_1" bash "$E2E_DIR/session.sh" hold 120 >/tmp/hold-lock.log 2>&1 &
    holder=$!
    check "lock events: alice's open session has the keyring unlocked" wait_unlocked
    check "lock events: secretctl pin set (the login password, then a PIN)" pin_set
    check "lock events: an after-first-unlock item and a when-unlocked one stored" store_classes
    check "lock events: a screen lock (loginctl lock-session, or logind's Lock from a stand-in) locks alice's login keyring" lock_screen
    check "lock events: behind the screen lock the after-first-unlock item reads, the other does not" background_reads_locked
    check "lock events: secretctl unlock --pin opens it again" pin_unlock
    check "lock events: a suspend (logind's PrepareForSleep) locks it" suspend_locks
    check "lock events: the PIN opens it after the resume" pin_unlock
    check "lock events: the PIN is in no journal" no_pin_in_journal
    rm -f /home/alice/.config/secretd/secretd.conf
    logout_check "lock events"
    wait "$holder" 2>/dev/null
}

scenario() { lock_events; }
