#!/bin/bash
# What a user does in a login session of make e2e: run over ssh by the scenarios as
#     bash /usr/local/lib/e2e/session.sh FUNCTION [ARGUMENT...]
# in the session that the login opened (its environment is what sshd and PAM gave it).
# Prints one "ok"/"not ok" line per check and always exits 0 (a failed check is not a failed
# login).

# shellcheck source=lib.sh
. /usr/local/lib/e2e/lib.sh

# ---- the clients people use, each storing or reading the items of the scenario

store_secret_tool() { printf '%s' "$SECRET_TOOL" | secret-tool store --label=e2e service svc account acc; }
lookup_secret_tool() { expect_output "$SECRET_TOOL" secret-tool lookup service svc account acc; }
store_python() {
    python3 -c 'import keyring, sys; keyring.set_password("py", "alice", sys.argv[1])' "$SECRET_PYTHON"
}
lookup_python() { expect_output "$SECRET_PYTHON" python3 -c 'import keyring; print(keyring.get_password("py", "alice"))'; }
store_git() {
    printf 'protocol=https\nhost=example.com\nusername=alice\npassword=%s\n\n' "$SECRET_GIT" |
        git credential-libsecret store
}
lookup_git() {
    local out
    out=$(printf 'protocol=https\nhost=example.com\nusername=alice\n\n' | git credential-libsecret get 2>&1)
    printf '%s\n' "$out" | grep -qxF "password=$SECRET_GIT" && return 0
    printf '%s\n' "$out"
    echo "git credential-libsecret get printed no password=<the stored one>"
    return 1
}
lookup_secretctl() { expect_output "$SECRET_TOOL" secretctl get svc acc; }

no_user_units() {
    [ ! -e "$HOME/.config/systemd" ] && return 0
    find "$HOME/.config/systemd"
    # shellcheck disable=SC2088 # the message names the directory as its user knows it
    echo "~/.config/systemd exists: the units were enabled per user"
}

# items_there WHAT: every item the first login stored reads back.
items_there() {
    check "$1: secret-tool lookup finds the item" lookup_secret_tool
    check "$1: Python keyring finds its password" lookup_python
    check "$1: git's libsecret helper finds the credential" lookup_git
    check "$1: secretctl get svc acc prints it" lookup_secretctl
}

# ---- the sessions of the scenario

# The state alice=N (state.sh): the first login's items, stored in a login whose password just
# created the login keyring. WHAT names the state.
store_items() {
    check "$1: the login keyring exists and is unlocked" keyring_is unlocked
    check "$1: secret-tool store" store_secret_tool
    check "$1: Python keyring set_password" store_python
    check "$1: git credential-libsecret store" store_git
    items_there "$1"
}

# The first password login of a new user: the login keyring is created from the password.
first_login() {
    check "first login: the login keyring exists and is unlocked" keyring_is unlocked
    check "first login: secret-tool store" store_secret_tool
    check "first login: Python keyring set_password" store_python
    check "first login: git credential-libsecret store" store_git
    items_there "first login"
    check "first login: a secretd started by hand on another bus refuses the keyring in use, naming the unit's" second_secretd_refused
    check "first login: the unit's secretd still serves the items (secretctl get)" lookup_secretctl
    check "first login: nothing enabled per user (~/.config/systemd absent)" no_user_units
    note "secretctl status: $(secretctl status 2>&1)"
}

# A secretd started by hand on another bus (a script under dbus-run-session) while the unit's
# runs on the same keyring: it exits 1 with one line naming the unit's, which goes on serving.
second_secretd_refused() {
    local pid out rc
    pid=$(secretd_pid)
    out=$(timeout 30 dbus-run-session -- secretd --foreground </dev/null 2>&1)
    rc=$?
    [ "$rc" = 1 ] || { printf '%s\n' "$out"; echo "the second secretd exited with status $rc, not 1"; return 1; }
    printf '%s\n' "$out" | grep -q "in use by another secretd (pid $pid)" ||
        { printf '%s\n' "$out"; echo "its message does not name the running secretd (pid $pid)"; return 1; }
    [ "$(secretd_pid)" = "$pid" ] || { echo "the running secretd (pid $pid) is gone"; return 1; }
}

# A later password login: unlocked again, items there. WHAT names the login.
password_login() {
    check "$1: the login keyring is unlocked" keyring_is unlocked
    items_there "$1"
}

# The first login after the machine rebooted; secretd is running, so look at it too.
after_reboot() {
    password_login "after reboot"
    hardening
    sandbox
}

# A login while the database is refused (24-newer-database.sh): FILE, written by schema version
# FOUND, which this secretd (reading versions up to SUPPORTED) refuses. Every client is told why
# at once and nothing is written.
newer_database_refused() {
    local file=$1 found=$2 supported=$3
    local why="the keyring database $file was written by a newer secretd (schema version $found; this secretd reads versions up to $supported)"
    check "newer database: secret-tool lookup fails at once" lookup_fails_fast
    check "newer database: a raw call gets io.github.secretd.Error.UnusableDatabase with the reason" unusable_database_error "$why"
    check "newer database: secret-tool store fails saying why" refused_saying "$why" secret-tool store --label=e2e service svc account new
    check "newer database: secretctl list fails saying why" refused_saying "$why" secretctl list
    check "newer database: secretctl status fails saying why (no keyring is served)" refused_saying "$why" secretctl status
}
# unusable_database_error WHY: OpenSession gets io.github.secretd.Error.UnusableDatabase, its message naming WHY.
unusable_database_error() {
    local out
    out=$(timeout 20 python3 -c '
from jeepney import DBusAddress, new_method_call
from jeepney.io.blocking import open_dbus_connection
from jeepney.wrappers import DBusErrorResponse, unwrap_msg
service = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Service")
connection = open_dbus_connection(bus="SESSION")
try:
    unwrap_msg(connection.send_and_get_reply(new_method_call(service, "OpenSession", "sv", ("plain", ("s", ""))), timeout=10))
    print("OpenSession succeeded")
except DBusErrorResponse as error:
    print("%s: %s" % (error.name, error.data[0] if error.data else ""))' 2>&1)
    printf '%s\n' "$out" | grep -qF "io.github.secretd.Error.UnusableDatabase: $1" && return 0
    printf '%s\n' "$out"
    echo "OpenSession did not get io.github.secretd.Error.UnusableDatabase naming: $1"
    return 1
}
# refused_saying WHY COMMAND...: COMMAND (stdin a would-be secret) fails within 5 s, its error naming WHY.
refused_saying() {
    local why=$1 start out rc took
    shift
    start=$(now)
    out=$(printf 'not stored' | timeout 20 "$@" 2>&1)
    rc=$?
    took=$(elapsed_since "$start")
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && printf '%s\n' "$out" | grep -qF "$why" &&
        awk -v t="$took" 'BEGIN { exit !(t < 5) }' && return 0
    printf '%s\n' "$out"
    echo "'$*' exited $rc after $took s; expected a failure within 5 s naming: $why"
    return 1
}

# secretd runs under its unit with its memory locked and its sandbox in force.
secretd_pid() { pgrep -u "$(id -u)" -x secretd | head -n 1; }
status_field() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }
under_unit() {
    local pid
    pid=$(systemctl --user show -p MainPID --value secretd.service)
    [ -n "$pid" ] && [ "$pid" != 0 ] && [ "$pid" = "$(secretd_pid)" ] && return 0
    systemctl --user status secretd.service --no-pager 2>&1 | head -n 5
    echo "secretd (pid $(secretd_pid)) is not the main process of secretd.service (MainPID $pid)"
    return 1
}
vmlck() {
    local pid kb
    pid=$(secretd_pid)
    kb=$(status_field "$pid" VmLck)
    [ -n "$kb" ] && [ "$kb" -gt 0 ] && { echo "note: VmLck: $kb kB"; return 0; }
    echo "secretd (pid $pid) VmLck: ${kb:-?} kB"
    return 1
}
status_is() {
    local pid value
    pid=$(secretd_pid)
    value=$(status_field "$pid" "$1")
    [ "$value" = "$2" ] && return 0
    echo "secretd (pid $pid) $1: ${value:-?}, expected $2"
    return 1
}
more_filters() {
    local pid mine theirs
    pid=$(secretd_pid)
    mine=$(status_field $$ Seccomp_filters)
    theirs=$(status_field "$pid" Seccomp_filters)
    [ "$theirs" -gt "$mine" ] 2>/dev/null && { echo "note: seccomp filters: secretd $theirs, the shell $mine"; return 0; }
    echo "secretd (pid $pid) Seccomp_filters: ${theirs:-?}; this shell's: ${mine:-?}"
    return 1
}
open_files() {
    local pid soft hard
    pid=$(secretd_pid)
    read -r soft hard <<EOF2
$(awk '/^Max open files/ { print $4, $5 }' "/proc/$pid/limits")
EOF2
    [ -n "$soft" ] && [ "$soft" = "$hard" ] && [ "$soft" -gt 1024 ] && { echo "note: open files: $soft (hard $hard)"; return 0; }
    echo "secretd (pid $pid) may have ${soft:-?} files open, its hard limit ${hard:-?}"
    return 1
}
hardening() {
    check "secretd runs as secretd.service" under_unit
    check "secretd raised its limit on open files to the unit's hard one (calls may carry descriptors)" open_files
    check "secretd's memory is locked (VmLck > 0 kB)" vmlck
    check "secretd runs with NoNewPrivs: 1" status_is NoNewPrivs 1
    check "secretd runs under a seccomp filter (Seccomp: 2)" status_is Seccomp 2
    check "secretd runs under more seccomp filters than its user's shell (the unit's)" more_filters
    note "secretd $(grep -E '^(VmLck|VmRSS|NoNewPrivs|Seccomp|CapEff):' "/proc/$(secretd_pid)/status" | tr -s '\t\n' '  ')"
}

# Each sandboxing directive of the unit is in force: probe.py ran as the unit's ExecStartPost
# (a drop-in scenario.sh adds for this login) and tried what each forbids; the same probe run
# by the same user manager in a unit without the directives (systemd-run) is the control.
sandbox() {
    local file=$XDG_RUNTIME_DIR/e2e-probe.txt _ unit control line directive value outside want
    for _ in $(seq 50); do
        [ -s "$file" ] && break
        sleep 0.2
    done
    if [ ! -s "$file" ]; then
        fail "sandbox: the probe ran under secretd.service (ExecStartPost)" "no $file"
        return
    fi
    unit=$(cat "$file")
    control=$(systemd-run --user --quiet --pipe --wait python3 "$E2E_DIR/probe.py" - 2>&1)
    while IFS= read -r line; do
        directive=${line%%: *}
        value=${line#*: }
        outside=$(printf '%s\n' "$control" | grep -F "$directive: " | head -n 1)
        outside=${outside#*: }
        case $directive in
        *"(not a directive)") continue ;;
        NoNewPrivileges*) want="NoNewPrivs 1" ;;
        UMask*) want="Umask 0077" ;;
        LimitCORE*) want="0 0" ;;
        *) want="" ;;
        esac
        if [ "$directive" = "SystemCallFilter (seccomp filters)" ]; then
            # systemd-nspawn puts every process of the container under a filter of its own:
            # the unit's filters come on top of it.
            if [ "$value" -gt "$outside" ] 2>/dev/null; then pass "sandbox: $directive in force ($value filters; outside the unit: $outside)"
            else fail "sandbox: $directive in force" "under the unit: $value filters, outside: $outside"; fi
        elif [ -n "$want" ]; then
            if [ "$value" = "$want" ]; then pass "sandbox: $directive in force ($value; outside the unit: $outside)"
            else fail "sandbox: $directive in force" "under the unit: $value, expected $want"; fi
        elif [ "${value%% *}" != blocked ]; then
            fail "sandbox: $directive in force" "under the unit: $value (outside: $outside)"
        elif [ "$outside" = allowed ]; then
            pass "sandbox: $directive in force (under the unit: $value; outside: allowed)"
        else
            # RestrictRealtime=: RLIMIT_RTPRIO is 0 0 everywhere in the container (nspawn keeps no
            # CAP_SYS_RESOURCE, so no limit can be raised), and the kernel refuses SCHED_FIFO anyway.
            note "sandbox: $directive: under the unit $value, but outside it too ($outside): not provable here$(
                [ "${directive%%=*}" = RestrictRealtime ] && printf ' (RLIMIT_RTPRIO: %s)' "$(grep -F RLIMIT_RTPRIO <<<"$unit" | sed 's/.*: //')")"
        fi
    done <<<"$unit"
}

# fails_fast SECONDS WHAT COMMAND...: COMMAND fails within SECONDS, not by a timeout (exit 124).
fails_fast() {
    local limit=$1 what=$2 start out rc took
    shift 2
    start=$(now)
    out=$("$@" 2>&1)
    rc=$?
    took=$(elapsed_since "$start")
    echo "note: $what exited $rc after $took s${out:+: $out}"
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && awk -v t="$took" -v l="$limit" 'BEGIN { exit !(t < l) }' && return 0
    echo "expected a failure within $limit s (exit 124 is a timeout)"
    return 1
}
# A login with an ssh key: no password, so the keyring stays locked until secretctl unlock.
lookup_fails_fast() { fails_fast 5 "secret-tool lookup" timeout 20 secret-tool lookup service svc account acc; }
unlock_with_password() { printf '%s' "$1" | secretctl unlock --password-stdin; }
key_login() {
    local password=${!1} # the name of the variable, so that no password is in a command line
    check "key login: the login keyring is locked" keyring_is locked
    check "key login: secret-tool lookup fails at once" lookup_fails_fast
    check "key login: secretctl get exits 3 (locked)" expect_status 3 timeout 20 secretctl get svc acc
    check "key login: secretctl unlock --password-stdin with the login password" unlock_with_password "$password"
    check "key login: unlocked after secretctl unlock" keyring_is unlocked
    check "key login: secret-tool lookup after the unlock" lookup_secret_tool
}

# D-Bus activation: the first client call starts secretd, with nothing enabled per user.
secretd_inactive() {
    ! systemctl --user is-active -q secretd.service && ! pgrep -u "$(id -u)" -x secretd >/dev/null && return 0
    systemctl --user status secretd.service --no-pager 2>&1 | head -n 5
    echo "secretd is still running"
    return 1
}
secretd_active() {
    systemctl --user is-active -q secretd.service && return 0
    systemctl --user status secretd.service --no-pager 2>&1 | head -n 5
    echo "secretd.service is $(systemctl --user is-active secretd.service)"
    return 1
}
client_call() {
    timeout 20 busctl --user call org.freedesktop.secrets /org/freedesktop/secrets org.freedesktop.DBus.Peer Ping &&
        timeout 20 secret-tool search --all service svc >/dev/null
}
activation() {
    systemctl --user stop secretd.service 2>/dev/null # (it warns that secretd.socket can start it again)
    check "activation: secretd stopped" secretd_inactive
    check "activation: a client's call (busctl Ping, secret-tool search) is answered" client_call
    check "activation: secretd.service is active after the call" secretd_active
    check "activation: nothing enabled per user (~/.config/systemd absent)" no_user_units
}

# ---- a sandboxed app through the desktop portal, as a Flatpak runs one (bubblewrap with its
# /.flatpak-info, the bus only through xdg-dbus-proxy in the same sandbox, with Flatpak's filters:
# the portals and nothing else); libsecret inside uses its file backend and asks the portal,
# which D-Bus activation starts as xdg-desktop-portal.service, for its key.
PORTAL_APP=org.example.E2E
flatpak_app() {
    local data=$HOME/.var/app/$PORTAL_APP/data info=$XDG_RUNTIME_DIR/e2e-flatpak-info bus=${DBUS_SESSION_BUS_ADDRESS#unix:path=}
    # bwrap's --info-fd writes the sandbox's process ids where flatpak keeps them for the
    # instance; xdg-desktop-portal 1.20 (Debian 13) refuses an app without them.
    mkdir -p "$data" "$XDG_RUNTIME_DIR/.flatpak/1"
    printf '[Application]\nname=%s\n\n[Instance]\ninstance-id=1\nsession-bus-proxy=true\n' "$PORTAL_APP" >"$info"
    timeout 60 bwrap --info-fd 3 --ro-bind /usr /usr --ro-bind /etc /etc --symlink usr/bin /bin --symlink usr/lib /lib \
        --symlink usr/lib64 /lib64 --symlink usr/sbin /sbin --dev /dev --proc /proc --tmpfs /tmp --tmpfs /run \
        --dir "$XDG_RUNTIME_DIR" --ro-bind "$info" /.flatpak-info --ro-bind "$bus" /run/host-bus --bind "$data" "$data" \
        --unshare-user --unshare-pid --unshare-ipc --unshare-net --unshare-uts --die-with-parent --new-session \
        --setenv DBUS_SESSION_BUS_ADDRESS "unix:path=$XDG_RUNTIME_DIR/bus" --setenv XDG_DATA_HOME "$data" \
        -- /bin/sh -c 'xdg-dbus-proxy unix:path=/run/host-bus "$XDG_RUNTIME_DIR/bus" --filter \
            "--call=org.freedesktop.portal.*=*" "--broadcast=org.freedesktop.portal.*=@/org/freedesktop/portal/*" &
            i=0; while [ ! -S "$XDG_RUNTIME_DIR/bus" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; exec "$@"' sh "$@" \
        3>"$XDG_RUNTIME_DIR/.flatpak/1/bwrapinfo.json"
}
store_in_app() { printf '%s' "$SECRET_PORTAL" | flatpak_app secret-tool store --label=e2e-app service app account alice; }
lookup_in_app() { expect_output "$SECRET_PORTAL" flatpak_app secret-tool lookup service app account alice; }
app_keyring_sealed() {
    local file=$HOME/.var/app/$PORTAL_APP/data/keyrings/default.keyring
    [ -s "$file" ] || { echo "no $file"; return 1; }
    ! grep -qF "$SECRET_PORTAL" "$file" || { echo "the secret is in clear in $file"; return 1; }
}
app_key_listed() {
    local out
    out=$(secretctl app-keys 2>&1) && grep -q "^$PORTAL_APP	login	" <<<"$out" && return 0
    echo "$out"
    return 1
}
app_key_hidden() {
    local out
    out=$(timeout 20 secret-tool search --all app_id "$PORTAL_APP" 2>&1)
    [ -z "$out" ] && return 0
    echo "$out"
    return 1
}
portal_active() {
    systemctl --user is-active -q xdg-desktop-portal.service && return 0
    systemctl --user status xdg-desktop-portal.service --no-pager 2>&1 | head -n 5
    return 1
}
app_lookup_fails_fast() { fails_fast 10 "the app's secret-tool lookup" flatpak_app secret-tool lookup service app account alice; }
portal_app() {
    # As a desktop session does (gnome-session exports it to the user manager): xdg-desktop-portal
    # 1.17 and later (Debian 13's 1.20) choose a Secret backend by portals.conf or by the
    # desktop's name in UseIn, and have none without it; 1.16 (Debian 12) takes one either way.
    systemctl --user set-environment XDG_CURRENT_DESKTOP=GNOME
    check "portal: a Flatpak-style app stores a secret through xdg-desktop-portal (libsecret's file backend)" store_in_app
    check "portal: xdg-desktop-portal.service was started by D-Bus activation" portal_active
    check "portal: the app's file keyring is there and does not hold the secret in clear" app_keyring_sealed
    check "portal: secretctl app-keys lists the app's key (in the login keyring)" app_key_listed
    check "portal: no ordinary client finds the app's key (secret-tool search)" app_key_hidden
    systemctl --user stop secretd.service 2>/dev/null
    check "portal: secretd stopped" secretd_inactive
    check "portal: the app's request starts secretd (D-Bus activation); its keyring is locked and nobody can be asked, so the app fails at once" app_lookup_fails_fast
    check "portal: secretd.service is active after the app's request" secretd_active
    check "portal: secretctl unlock opens the login keyring" unlock_with_password "$PASSWORD_1"
    check "portal: the app reads its secret back from the restarted secretd" lookup_in_app
    systemctl --user unset-environment XDG_CURRENT_DESKTOP
}

# The TPM slot: enrolled with the login password (on stdin) in a login session.
tpm_enrolled() {
    local out
    out=$(secretctl tpm status --json) || return 1
    case $out in *'"enrolled":true'*) return 0 ;; esac
    echo "secretctl tpm status --json: $out"
    return 1
}
tpm_enroll() {
    check "tpm: secretctl tpm enroll (the login password on stdin)" expect_status 0 bash -c 'printf "%s\n" "$1" | secretctl tpm enroll' _ "$1"
    check "tpm: secretctl tpm status shows the slot" tpm_enrolled
}

# su - alice from this (bob's) session, typing alice's password at su's prompt, while alice has
# no session of her own: pam_systemd creates no session inside bob's, so alice gets no user
# manager, no /run/user/UID and no bus, and pam_secretd has nobody to hand the password to
# (pam_secretd(8), CAVEATS). What must hold: su works, and a client says at once that there is
# no provider (secretctl exit 5) instead of hanging.
su_to_alice() {
    local out rc started elapsed
    started=$(date +%s)
    out=$(E2E_ANSWERS=$PASSWORD_1 python3 "$E2E_DIR/pty-drive.py" 60 su - alice -c 'secretctl status; echo "status=$?"' 2>&1)
    rc=$?
    elapsed=$(($(date +%s) - started))
    printf '%s\n' "$out"
    if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q '^status=5' \
        && printf '%s\n' "$out" | grep -q 'no Secret Service provider' && [ "$elapsed" -lt 30 ]; then
        return 0
    fi
    echo "su - alice exited $rc after $elapsed s; expected secretctl to exit 5 (no provider) at once"
    return 1
}
su_from_bob() {
    check "su - alice from bob's session (alice not logged in): su works, clients report no provider at once (exit 5)" su_to_alice
}

# The same while alice is logged in elsewhere (her user manager and bus run, her keyring is
# locked): su - alice, with her password, from bob's session.
su_to_alice_running() {
    typed "$PASSWORD_1" su - alice -c \
        'export XDG_RUNTIME_DIR=/run/user/$(id -u) DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/$(id -u)/bus; secretctl status'
}
su_from_bob_running() {
    check "su - alice from bob's session while alice is logged in elsewhere: su succeeds" su_to_alice_running
}

# A key login that stays open for SECONDS with the keyring locked (alice is logged in).
hold_locked() {
    check "hold: the login keyring is locked" keyring_is locked
    sleep "$1"
}

# passwd, typed at a terminal: old, new, new.
change_password() {
    typed "$(printf '%s\n%s\n%s' "$PASSWORD_1" "$PASSWORD_2" "$PASSWORD_2")" passwd
}
run_passwd() {
    check "passwd: alice changes her password (old, new, new at the terminal)" change_password
    check "passwd: the login keyring is still unlocked" keyring_is unlocked
}

# After root set the password while alice was away: the keyring stays locked at the login, and
# the previous password (NAME: the variable that holds it) unlocks it at once: the login's own
# password, from root's PAM stack, made nothing wait.
after_root_reset() {
    local previous=${!1} out rc name="chpasswd while logged out: secretctl unlock --password-stdin with the previous password, right after the login"
    note "secretctl status after the login: $(secretctl status 2>&1)"
    check "chpasswd while logged out: the new password's login leaves the keyring locked" keyring_is locked
    out=$(printf '%s' "$previous" | secretctl unlock --password-stdin 2>&1)
    rc=$?
    if [ $rc -eq 0 ]; then pass "$name"; else fail "$name" "exit status $rc" "$out"; fi
    check "chpasswd while logged out: unlocked after secretctl unlock" keyring_is unlocked
    items_there "chpasswd while logged out"
}

# A process of alice's (not a login) on her login socket asks secretd to set the login password
# without the old one, which only root's passwd may: prints secretd's answer (2: FAILED).
socket_reset() {
    printf '%s' "$WRONG_PASSWORD" | python3 -c '
import socket, struct, sys
new = sys.stdin.buffer.read()
body = struct.pack(">I", 0) + struct.pack(">I", len(new)) + new
frame = struct.pack(">II", 8 + len(body), 2) + body
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
s.connect(sys.argv[1])
s.sendall(frame)
s.shutdown(socket.SHUT_WR)
reply = s.recv(16)
print(struct.unpack(">II", reply)[1] if len(reply) == 8 else "none")' "$XDG_RUNTIME_DIR/secretd/control"
}
refused_unlock() { ! unlock_with_password "$1"; }
# The reset refused, and the keyring still opens with its password (NAME: the variable that
# holds it), not with the one asked for.
socket_reset_refused() {
    local password=${!1}
    check "the login socket: a process of alice's asking to set the password without the old one gets FAILED (2)" \
        expect_output 2 socket_reset
    check "the login socket: secretctl lock" secretctl lock
    check "the login socket: the password it asked for does not unlock the keyring" refused_unlock "$WRONG_PASSWORD"
    sleep 1.5  # the wait after that wrong password
    check "the login socket: the keyring's own password still does" unlock_with_password "$password"
}

# Prints the session's keyring state (no check).
show_state() { note "login keyring: $(login_state 2>&1)"; }

# Keeps the session open for SECONDS (so that root can act while alice is logged in).
hold() {
    check "hold: the login keyring is unlocked" keyring_is unlocked
    sleep "$1"
}

# ---- carol, whose desktop ran gnome-keyring before secretd

# The desktop session's start: its session manager runs the XDG autostart entries (dex stands
# in for gnome-session), gnome-keyring's among them; gives them a moment to claim names.
desktop_start() { dex -a -e GNOME >/dev/null 2>&1; sleep 2; }

# program_of NAME: the program that owns bus NAME on this session bus, or "none".
program_of() {
    local pid
    pid=$(busctl --user call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus \
        GetConnectionUnixProcessID s "$1" 2>/dev/null | awk '{ print $2 }')
    # argv[0]: secretd is not dumpable, so its /proc/PID/exe cannot be read, even by its user.
    [ -n "$pid" ] && basename "$(tr '\0' '\n' <"/proc/$pid/cmdline" | head -n 1)" || echo none
}
# claimants: the programs that own org.freedesktop.secrets or wait in line for it, the owner
# first, on one line.
claimants() {
    local name list=""
    for name in $(busctl --user call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus \
        ListQueuedOwners s org.freedesktop.secrets 2>/dev/null | cut -d' ' -f3- | tr -d '"'); do
        list="$list${list:+ }$(program_of "$name")"
    done
    echo "${list:-none}"
}
# claimed_by PROGRAMS: exactly these programs own the name and wait for it, in this order.
claimed_by() {
    local found
    found=$(claimants)
    [ "$found" = "$1" ] && return 0
    ps -u "$(id -u)" -o pid,args | grep -E 'keyring|secretd' | grep -v grep
    echo "org.freedesktop.secrets: owner and queue '$found', expected '$1'"
    return 1
}
store_gk() { printf '%s' "$SECRET_GK" | secret-tool store --label=carol-gk service gk account carol; }
lookup_gk() { expect_output "$SECRET_GK" timeout 20 secret-tool lookup service gk account carol; }
import_from_gk() {
    local out rc
    out=$(printf '%s' "$PASSWORD_CAROL" | secretctl import secret-service --password-stdin 2>&1)
    rc=$?
    printf '%s\n' "$out"
    [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q '^login: imported [1-9]' && return 0
    echo "secretctl import secret-service exited $rc; expected 'login: imported N' (N > 0)"
    return 1
}
restart_secretd() {
    local before after
    before=$(pgrep -u "$(id -u)" -x secretd)
    systemctl --user restart secretd.service && sleep 1
    timeout 20 secret-tool search --all service gk >/dev/null
    after=$(pgrep -u "$(id -u)" -x secretd)
    [ -n "$after" ] && [ "$after" != "$before" ] && return 0
    echo "secretd pid before the restart: ${before:-none}, after: ${after:-none}"
    return 1
}
gk_activation_claims_nothing() {
    local out rc
    out=$(timeout 20 busctl --user call org.gnome.keyring / org.freedesktop.DBus.Peer Ping 2>&1)
    rc=$?
    echo "note: calling org.gnome.keyring: exit $rc${out:+: $out}"
    [ $rc -ne 124 ] || { echo "the call timed out"; return 1; }
    sleep 1
    claimed_by secretd
}
# gnome-keyring 42.1 started by its socket at an ssh login (here, not on a desktop?) gets the
# password from pam_gnome_keyring and unlocks the login keyring ("gkr-pam: unlocked login
# keyring"), but never exports the login collection on the bus ("Object does not exist at
# path"); restarted, it does (locked). So: restart it, then unlock it as a person would
# (secretctl unlock uses gnome-keyring's UnlockWithMasterPassword).
gk_login_keyring() {
    if ! timeout 20 busctl --user get-property org.freedesktop.secrets /org/freedesktop/secrets/collection/login \
        org.freedesktop.Secret.Collection Locked >/dev/null 2>&1; then
        echo "note: gnome-keyring has not exported its login keyring: restarting gnome-keyring-daemon.service"
        systemctl --user restart gnome-keyring-daemon.service || return 1
        sleep 1
    fi
    unlock_with_password "$PASSWORD_CAROL" && keyring_is unlocked
}

# Login 1: gnome-keyring, unlocked by its PAM module, provides the Secret Service; carol stores.
gk_first() {
    desktop_start
    check "gnome-keyring desktop: gnome-keyring-daemon owns org.freedesktop.secrets" claimed_by gnome-keyring-daemon
    check "gnome-keyring desktop: its login keyring is unlocked" gk_login_keyring
    check "gnome-keyring desktop: secret-tool stores into gnome-keyring's login keyring" store_gk
    check "gnome-keyring desktop: secret-tool finds it" lookup_gk
}
# Login 2: carol copies her keyring into secretd while gnome-keyring runs, then makes secretd
# her provider with secretctl setup.
gk_switch() {
    desktop_start
    check "switch: gnome-keyring owns the name at the login" claimed_by gnome-keyring-daemon
    check "switch: its login keyring is unlocked" gk_login_keyring
    check "switch: secretctl import secret-service copies gnome-keyring's login keyring into secretd" import_from_gk
    check "switch: carol masks gnome-keyring-daemon.socket herself before setup" systemctl --user mask gnome-keyring-daemon.socket
    check "switch: secretctl setup exits 0" expect_status 0 secretctl setup
    check "switch: setup recorded the unit it masked (the service), not carol's socket" mask_record_is gnome-keyring-daemon.service
    check "switch: secretd alone owns org.freedesktop.secrets, nobody waits in line" claimed_by secretd
    check "switch: secretctl unlock --password-stdin with her password" unlock_with_password "$PASSWORD_CAROL"
    check "switch: secret-tool finds gnome-keyring's item in secretd" lookup_gk
}
# Login 3: her desktop starts as usual; gnome-keyring does not come back.
gk_kept_off() {
    desktop_start
    check "kept off: after the desktop's autostart, secretd alone claims the name" claimed_by secretd
    check "kept off: a call to org.gnome.keyring leaves secretd alone claiming the name" gk_activation_claims_nothing
    check "kept off: secretd restarted (systemctl --user restart) and asked again" restart_secretd
    check "kept off: after secretd's restart, secretd alone claims the name (no gnome-keyring took it)" claimed_by secretd
    check "kept off: secretctl unlock --password-stdin" unlock_with_password "$PASSWORD_CAROL"
    check "kept off: the item is there" lookup_gk
}
# Login 4: carol undoes the switch.
gk_undo() {
    desktop_start
    check "undo: secretctl setup --undo exits 0 and says it left carol's own mask" undo_keeps_own_mask
    check "undo: the service setup masked is unmasked, carol's socket still masked, the record gone" masks_after_undo
    check "undo: carol unmasks her socket again" systemctl --user unmask gnome-keyring-daemon.socket
}
# What secretctl setup lists in its record of the units it masked is exactly "$@".
mask_record_is() {
    local listed
    listed=$(grep -v '^#' ~/.config/systemd/user/secretctl-setup.masked) || { echo "no record"; return 1; }
    [ "$listed" = "$(printf '%s\n' "$@")" ] && return 0
    echo "the record lists: $listed"
    return 1
}
undo_keeps_own_mask() {
    local out
    out=$(secretctl setup --undo 2>&1) || { printf '%s\n' "$out"; return 1; }
    printf '%s\n' "$out"
    printf '%s\n' "$out" | grep -q "left gnome-keyring-daemon.socket masked, as it was before secretctl setup"
}
masks_after_undo() {
    local dir=~/.config/systemd/user
    ls -l "$dir"
    [ "$(readlink "$dir/gnome-keyring-daemon.socket")" = /dev/null ] && [ ! -L "$dir/gnome-keyring-daemon.service" ] &&
        [ ! -e "$dir/secretctl-setup.masked" ]
}
# A login with gnome-keyring back: it provides the Secret Service, unlocked, with her item.
gk_back() {
    desktop_start
    check "$1: gnome-keyring-daemon alone claims org.freedesktop.secrets again" claimed_by gnome-keyring-daemon
    check "$1: its login keyring is unlocked" gk_login_keyring
    check "$1: gnome-keyring's item is there" lookup_gk
}
# After setup --system, with her secretd keyring imported: PAM unlocks secretd at the login,
# and the desktop's autostart starts no gnome-keyring.
gk_replaced() {
    desktop_start
    check "replaced for everyone: secretd alone claims the name" claimed_by secretd
    check "replaced for everyone: the login keyring is unlocked" keyring_is unlocked
    check "replaced for everyone: gnome-keyring's item is there" lookup_gk
}

"$@"
exit 0
