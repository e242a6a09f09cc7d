#!/bin/bash
# The make e2e scenario, run as root inside the booted container by scripts/e2e.sh:
#     bash /usr/local/lib/e2e/scenario.sh first-boot     (then the machine reboots)
#     bash /usr/local/lib/e2e/scenario.sh second-boot
# What people do on a Debian 13 or 12 machine after `apt install` of the packages: the administrator
# makes secretd everyone's login keyring, users log in over ssh with passwords and keys, use
# su and passwd, root resets a password, and at the end the administrator undoes the setup.
# Users log in through the machine's own sshd on 127.0.0.1, exactly as from another machine.

# shellcheck source=lib.sh
. /usr/local/lib/e2e/lib.sh

# ---- the administrator: secretctl setup --system

pam_line() { grep -q '^[^#]*pam_secretd\.so' "/etc/pam.d/common-$1" && return 0; cat "/etc/pam.d/common-$1"; echo "no pam_secretd.so line in /etc/pam.d/common-$1"; return 1; }
session_order() {
    local systemd secretd
    systemd=$(grep -n '^[^#]*pam_systemd\.so' /etc/pam.d/common-session | head -n 1 | cut -d: -f1)
    secretd=$(grep -n '^[^#]*pam_secretd\.so' /etc/pam.d/common-session | head -n 1 | cut -d: -f1)
    [ -n "$systemd" ] && [ -n "$secretd" ] && [ "$secretd" -gt "$systemd" ] && return 0
    cat /etc/pam.d/common-session
    echo "pam_secretd.so (line ${secretd:-none}) is not after pam_systemd.so (line ${systemd:-none})"
    return 1
}
enabled_globally() {
    local found
    found=$(find /etc/systemd/user -path "*.wants/$1" 2>/dev/null)
    [ -n "$found" ] && { echo "$found"; return 0; }
    find /etc/systemd/user 2>/dev/null
    echo "no /etc/systemd/user/*.wants/$1"
    return 1
}
system_state() {
    sha256sum /etc/pam.d/common-* /etc/xdg/autostart/gnome-keyring-secrets.desktop
    find /etc/systemd/user /usr/share/dbus-1/services -printf '%p %l\n' 2>/dev/null | sort
    dpkg-divert --list | sort
}
setup_again() {
    local before after out rc
    before=$(system_state)
    out=$(secretctl setup --system 2>&1)
    rc=$?
    after=$(system_state)
    printf '%s\n' "$out"
    [ $rc -eq 0 ] || { echo "the second secretctl setup --system exited $rc"; return 1; }
    [ "$before" = "$after" ] && return 0
    diff <(printf '%s\n' "$before") <(printf '%s\n' "$after")
    echo "the second run changed the files above"
    return 1
}
system_setup() {
    local out rc name="setup --system exits 0 and says what it changed"
    out=$(secretctl setup --system 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then fail "$name" "exit status $rc" "$out"
    elif [ -z "$out" ]; then fail "$name" "it printed nothing"
    else pass "$name"; fi
    note "secretctl setup --system printed:" "$out"
    check "setup --system: /etc/pam.d/common-auth calls pam_secretd.so" pam_line auth
    check "setup --system: /etc/pam.d/common-password calls pam_secretd.so" pam_line password
    check "setup --system: /etc/pam.d/common-session calls pam_secretd.so after pam_systemd.so" session_order
    check "setup --system: secretd.socket enabled for every user" enabled_globally secretd.socket
    check "setup --system: secretd.service enabled for every user" enabled_globally secretd.service
    check "setup --system: gnome-keyring's units masked for every user" gk_masked
    check "setup --system: gnome-keyring's three D-Bus activation files diverted, linked to secretd's" gk_diverted
    check "setup --system: gnome-keyring's autostart entry hidden" gk_hidden
    check "setup --system run a second time: exits 0, changes nothing" setup_again
}

# ---- gnome-keyring, for every user

GK_FILES="org.freedesktop.secrets org.gnome.keyring org.freedesktop.impl.portal.Secret"
gk_masked() {
    local unit bad=""
    for unit in gnome-keyring-daemon.socket gnome-keyring-daemon.service; do
        [ "$(readlink "/etc/systemd/user/$unit")" = /dev/null ] || bad="$bad $unit"
    done
    [ -z "$bad" ] && return 0
    ls -l /etc/systemd/user
    echo "not masked in /etc/systemd/user:$bad"
    return 1
}
gk_diverted() {
    local name path bad=""
    for name in $GK_FILES; do
        path=/usr/share/dbus-1/services/$name.service
        dpkg-divert --list "$path" | grep -qx "local diversion of $path to $path.gnome-keyring" || bad="$bad $name (no diversion)"
        [ "$(readlink "$path")" = "/usr/share/secretd/dbus-1/services/$name.service" ] || bad="$bad $name (link: $(readlink "$path"))"
        grep -q gnome-keyring-daemon "$path.gnome-keyring" || bad="$bad $name (moved file)"
    done
    [ -z "$bad" ] && return 0
    dpkg-divert --list; ls -l /usr/share/dbus-1/services
    echo "activation files:$bad"
    return 1
}
gk_hidden() {
    grep -qx 'Hidden=true' /etc/xdg/autostart/gnome-keyring-secrets.desktop && return 0
    cat /etc/xdg/autostart/gnome-keyring-secrets.desktop
    echo "no Hidden=true line"
    return 1
}

system_undo() {
    check "setup --system --undo exits 0" expect_status 0 secretctl setup --system --undo
    check "setup --system --undo: no pam_secretd in /etc/pam.d/common-*" no_pam_lines
    check "setup --system --undo: no secretd unit enabled in /etc/systemd/user" no_units
    check "setup --system --undo: password logins still work" ssh_password alice "$PASSWORD_5" true  # her last password
    check "setup --system --undo: gnome-keyring's files are its package's again (dpkg --verify), no diversion, no mask" gk_restored
    session "gnome-keyring back for everyone" password carol "$PASSWORD_CAROL" gk_back "gnome-keyring back for everyone"
    logout_check "gnome-keyring back for everyone" carol
}

# ---- users, as an administrator creates them

create_users() {
    useradd -m -s /bin/bash alice && useradd -m -s /bin/bash bob &&
        printf 'alice:%s\nbob:%s\n' "$PASSWORD_1" "$PASSWORD_BOB" | chpasswd &&
        install -d -m 700 /root/.ssh && ssh-keygen -q -t ed25519 -N '' -f /root/.ssh/e2e_key &&
        install -d -m 700 -o alice -g alice ~alice/.ssh &&
        install -m 600 -o alice -g alice /root/.ssh/e2e_key.pub ~alice/.ssh/authorized_keys
}

# carol used gnome-keyring on her desktop before secretd came, and switches herself over
# (secretctl import secret-service, secretctl setup), before the administrator does it for all.
gnome_keyring_user() {
    check "user carol created with a password" create_user carol "$PASSWORD_CAROL"
    session "gnome-keyring desktop" password carol "$PASSWORD_CAROL" gk_first
    logout_check "gnome-keyring desktop" carol
    session "switch to secretd" password carol "$PASSWORD_CAROL" gk_switch
    logout_check "switch to secretd" carol
    session "gnome-keyring kept off" password carol "$PASSWORD_CAROL" gk_kept_off
    logout_check "gnome-keyring kept off" carol
    session "undo the switch" password carol "$PASSWORD_CAROL" gk_undo
    logout_check "undo the switch" carol
    session "gnome-keyring back" password carol "$PASSWORD_CAROL" gk_back "gnome-keyring back"
    logout_check "gnome-keyring back" carol
}
create_user() { useradd -m -s /bin/bash "$1" && printf '%s:%s\n' "$1" "$2" | chpasswd; }

# ---- logins

# A wrong password: the login fails and the keyring's files do not change.
wrong_password() {
    local before after rc
    before=$(database_digest alice)
    [ -n "$before" ] || { echo "no files under ~alice/.local/share/secretd"; return 1; }
    ssh_password alice "$WRONG_PASSWORD" true
    rc=$?
    after=$(database_digest alice)
    [ $rc -ne 0 ] || { echo "the login with a wrong password succeeded"; return 1; }
    echo "note: ssh with a wrong password exited $rc"
    [ "$before" = "$after" ] && return 0
    diff <(printf '%s\n' "$before") <(printf '%s\n' "$after")
    echo "the keyring's files changed"
    return 1
}

# su - alice as root asks no password, so nothing unlocks the keyring.
su_as_root() {
    local out rc state
    out=$(timeout 60 su - alice -c 'secretctl status --json' 2>&1)
    rc=$?
    state=$(printf '%s\n' "$out" | state_from_json 2>&1)
    printf '%s\n' "$out"
    [ "$state" = locked ] && return 0
    echo "su - alice exited $rc; login keyring: $state, expected locked"
    return 1
}

# alice is logged in with a key (her keyring locked); bob runs su - alice and types her password.
wait_session() {
    local i
    for i in $(seq 100); do
        [ -S "/run/user/$(id -u alice)/bus" ] && return 0
        sleep 0.3
    done
    echo "alice's session bus did not appear"
    return 1
}
su_while_logged_in() {
    local holder
    ssh_key alice bash "$E2E_DIR/session.sh" hold_locked 90 >/tmp/hold.log 2>&1 &
    holder=$!
    check "su while alice is logged in: her key login's session runs" wait_session
    check "su while alice is logged in: her login keyring is locked before su" \
        expect_status 0 as_user alice bash -c ". $E2E_DIR/lib.sh; keyring_is locked"
    check "wrong password while alice is logged in (secretd running): the ssh login fails, the files are unchanged" \
        wrong_password
    check "wrong password while alice is logged in: her login keyring is still locked" \
        expect_status 0 as_user alice bash -c ". $E2E_DIR/lib.sh; keyring_is locked"
    session "su from bob while alice is logged in" password bob "$PASSWORD_BOB" su_from_bob_running
    check "su - alice from bob's session while alice is logged in: her login keyring is unlocked" \
        expect_status 0 as_user alice bash -c ". $E2E_DIR/lib.sh; keyring_is unlocked"
    logout_check "su while alice is logged in" bob
    logout_check "su while alice is logged in"
    wait "$holder" 2>/dev/null
}

# alice logs in on a terminal with login(1), as on the console, and looks at her keyring.
console_login() {
    local out rc
    out=$(E2E_ANSWERS=$PASSWORD_1 E2E_TYPE=$'secretctl status\nexit' timeout 60 \
        python3 "$E2E_DIR/pty-drive.py" 50 login alice 2>&1)
    rc=$?
    printf '%s\n' "$out"
    printf '%s\n' "$out" | grep -q '/collection/login[[:space:]]*unlocked' && return 0
    echo "login exited $rc; secretctl status in its shell did not show the login keyring unlocked"
    return 1
}

old_password_refused() {
    ssh_password alice "$PASSWORD_1" true && { echo "the old password still logs in"; return 1; }
    return 0
}

# alice stays logged in (her session holds the keyring unlocked) while root sets her password.
root_sets_password() { printf 'alice:%s\n' "$1" | chpasswd; }
reset_while_logged_in() {
    local holder
    ssh_password alice "$PASSWORD_2" bash "$E2E_DIR/session.sh" hold 90 >/tmp/hold.log 2>&1 &
    holder=$!
    check "chpasswd while logged in: alice's open session has the keyring unlocked" wait_unlocked
    check "chpasswd while logged in: root sets alice's password (chpasswd)" root_sets_password "$PASSWORD_3"
    logout_check "chpasswd while logged in"
    wait "$holder" 2>/dev/null
    session "after chpasswd while logged in" password alice "$PASSWORD_3" password_login "after chpasswd while logged in"
    logout_check "after chpasswd while logged in"
}

# secretd's journal says who sent each login socket request: root's PAM stack for the ssh
# logins, and the refusal of alice's own process's reset.
socket_journal() {
    local journal
    journal=$(journalctl --no-pager -o cat _UID="$(id -u alice)" _COMM=secretd)
    printf '%s\n' "$journal" | grep -q "the login socket: UNLOCK from root's PAM stack" ||
        { echo "no UNLOCK from root's PAM stack in alice's secretd journal"; return 1; }
    printf '%s\n' "$journal" | grep -q "refused a login password change without the old password from a process of the user" ||
        { echo "no refusal of the reset in alice's secretd journal"; return 1; }
}

# Root sets alice's password while she is logged in with her keyring locked: it keeps opening with
# its password until she unlocks it with that, then it takes root's.
alice_unlocks_with() { printf '%s' "$1" | as_user alice secretctl unlock --password-stdin; }
lock_alice() { as_user alice secretctl lock && expect_status 0 as_user alice bash -c ". $E2E_DIR/lib.sh; keyring_is locked"; }
took_root_password() {
    local i
    for i in $(seq 50); do
        journalctl --no-pager -o cat _UID="$(id -u alice)" | grep -q 'the login keyring now opens with the login password root set' && return 0
        sleep 0.2
    done
    echo "secretd did not say it re-wrapped the keyring under root's password"
    return 1
}
reset_while_locked() {
    local holder
    ssh_password alice "$PASSWORD_3" bash "$E2E_DIR/session.sh" hold 90 >/tmp/hold.log 2>&1 &
    holder=$!
    check "chpasswd while alice's keyring is locked: her open session has it unlocked" wait_unlocked
    check "chpasswd while alice's keyring is locked: secretctl lock" lock_alice
    check "chpasswd while alice's keyring is locked: root sets her password (chpasswd)" root_sets_password "$PASSWORD_4"
    check "chpasswd while alice's keyring is locked: it still opens with its password (secretctl unlock)" \
        alice_unlocks_with "$PASSWORD_3"
    check "chpasswd while alice's keyring is locked: as it unlocks, secretd re-wraps it under root's (journal)" took_root_password
    logout_check "chpasswd while locked"
    wait "$holder" 2>/dev/null
    session "after chpasswd while locked" password alice "$PASSWORD_4" password_login "after chpasswd while locked"
    logout_check "after chpasswd while locked"
}

# ---- locking on screen lock and on sleep, and the PIN after it (lock-on-screen-lock,
# lock-on-suspend). Root drives alice's open session: loginctl lock-session, systemctl suspend.

alice_state() { as_user alice secretctl status --json 2>/dev/null | state_from_json 2>/dev/null; }
wait_state() {
    local i state
    for i in $(seq 50); do
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

# ---- unattended unlock from the TPM: a software TPM (swtpm) as root runs it for the machine,
# its socket in the group tss as /dev/tpmrm0 is; alice enrols in a session, then her user
# manager starts with no login at all (linger, as on a server) and secretd unlocks from the TPM.

TPM_SOCKET=/run/e2e-swtpm/tpm
tpm_start() {
    local tss
    tss=$(getent group tss | cut -d: -f3) || { echo "no group tss"; return 1; }
    mkdir -p /var/lib/e2e-swtpm /run/e2e-swtpm && chmod 755 /run/e2e-swtpm &&
        systemd-run --unit=e2e-swtpm --quiet swtpm socket --tpm2 --tpmstate dir=/var/lib/e2e-swtpm \
            --server "type=unixio,path=$TPM_SOCKET,mode=0660,gid=$tss" \
            --ctrl "type=unixio,path=$TPM_SOCKET.ctrl,mode=0660,gid=$tss" --flags not-need-init,startup-clear &&
        usermod -aG tss alice || return 1
    for _ in $(seq 50); do [ -S "$TPM_SOCKET" ] && return 0; sleep 0.2; done
    echo "swtpm did not make $TPM_SOCKET: $(systemctl status e2e-swtpm --no-pager 2>&1 | tail -n 5)"
    return 1
}
tpm_config() {
    local dir=/home/alice/.config/secretd
    install -d -o alice -g alice -m 700 /home/alice/.config "$dir" &&
        printf 'tpm-tcti = swtpm:path=%s\n' "$TPM_SOCKET" >"$dir/secretd.conf" &&
        chown alice:alice "$dir/secretd.conf" && chmod 600 "$dir/secretd.conf"
}
# Her user manager with no session (linger), restarted: secretd starts with no password.
tpm_unattended() {
    local uid state i
    uid=$(id -u alice)
    loginctl enable-linger alice && systemctl restart "user@$uid.service" || return 1
    for i in $(seq 50); do
        state=$(as_user alice secretctl status --json 2>/dev/null | state_from_json 2>/dev/null)
        [ "$state" = unlocked ] && break
        sleep 0.3
    done
    [ "$state" = unlocked ] || { echo "the login keyring is ${state:-unreachable} with no login"; return 1; }
    journalctl --no-pager -o cat _UID="$uid" | grep -q 'unlocked the login keyring with the TPM' && return 0
    echo "secretd did not say it unlocked with the TPM"
    return 1
}
tpm_item_reads() { expect_output "$SECRET_TOOL" as_user alice secretctl get svc acc; }
tpm_removed_locks() {
    local uid state
    uid=$(id -u alice)
    as_user alice secretctl tpm remove && systemctl restart "user@$uid.service" || return 1
    state=$(as_user alice secretctl status --json 2>/dev/null | state_from_json 2>/dev/null)
    [ "$state" = locked ] && return 0
    echo "after tpm remove the login keyring is ${state:-unreachable}"
    return 1
}
tpm_stop() {
    loginctl disable-linger alice
    gpasswd -d alice tss >/dev/null
    rm -f /home/alice/.config/secretd/secretd.conf
    systemctl stop e2e-swtpm
}
tpm_unlock() {
    check "tpm: a software TPM (swtpm) serves $TPM_SOCKET to the group tss, alice is in it" tpm_start
    check "tpm: alice's secretd.conf names it (tpm-tcti)" tpm_config
    session "tpm enroll" password alice "$1" tpm_enroll "$1"
    logout_check "tpm enroll"
    check "tpm: with no login (linger) and no password, secretd unlocks the login keyring from the TPM" tpm_unattended
    check "tpm: an item stored before reads back" tpm_item_reads
    check "tpm: after secretctl tpm remove, the next start leaves the keyring locked" tpm_removed_locks
    tpm_stop
    logged_out alice
}

# ---- sync between machines (secretctl sync, secretctl history) through a git remote over ssh:
# alice and bob stand for two machines, each with her own user manager and secretd from a real
# password login; the remote is a bare repository of the user git (git-shell), reached through
# this machine's sshd at localhost with each one's own ssh key and known_hosts, as another
# machine's sshd would be. Root drives both open sessions (as_user), as in the lock events.

SYNC_REMOTE=git@localhost:sync.git
SYNC_REPO=/home/git/sync.git
SYNC_STATE=/run/e2e-sync # what one check hands the next: device ids, the code
SYNC_LABEL="E2E synced mail login"
SYNC_COMMENT="e2e-sync-comment"
SYNC_SILENT_PORT=2223 # a server that accepts and never says a word
SYNC_USERS="alice bob"

# The repository, the users' keys and known_hosts, all as a person would set them up.
sync_host() {
    local user home
    id git >/dev/null 2>&1 || useradd -m -s /usr/bin/git-shell git || return 1
    runuser -u git -- git init --quiet --bare --initial-branch main "$SYNC_REPO" &&
        install -d -m 700 -o git -g git /home/git/.ssh || return 1
    : >/home/git/.ssh/authorized_keys
    for user in $SYNC_USERS; do
        home=$(getent passwd "$user" | cut -d: -f6)
        install -d -m 700 -o "$user" -g "$user" "$home/.ssh" &&
            runuser -u "$user" -- ssh-keygen -q -t ed25519 -N '' -C "$user@e2e" -f "$home/.ssh/id_ed25519" &&
            cat "$home/.ssh/id_ed25519.pub" >>/home/git/.ssh/authorized_keys &&
            ssh-keyscan localhost 2>/dev/null | runuser -u "$user" -- tee -a "$home/.ssh/known_hosts" >/dev/null || return 1
        grep -q '^localhost ' "$home/.ssh/known_hosts" || { echo "ssh-keyscan localhost found no host key"; return 1; }
    done
    chown git:git /home/git/.ssh/authorized_keys && chmod 600 /home/git/.ssh/authorized_keys
}
# Rounds every 2 s (sync-interval), so that a change reaches the other machine by itself soon.
sync_config() {
    local user dir
    for user in $SYNC_USERS; do
        dir=$(getent passwd "$user" | cut -d: -f6)/.config/secretd
        install -d -o "$user" -g "$user" -m 700 "${dir%/secretd}" "$dir" &&
            printf 'sync-interval = 2\n' >"$dir/secretd.conf" &&
            chown "$user:$user" "$dir/secretd.conf" && chmod 600 "$dir/secretd.conf" || return 1
    done
}
# The control: each user's own git reaches the remote over ssh, outside secretd.
sync_reachable() {
    local user
    for user in $SYNC_USERS; do
        as_user "$user" timeout 30 git ls-remote "$SYNC_REMOTE" || { echo "git ls-remote $SYNC_REMOTE as $user failed"; return 1; }
    done
}

# sync_fails USER REMOTE REASON [LIMIT]: secretctl sync init REMOTE fails within LIMIT seconds
# (10; no timeout, no question), and what it says names git, the remote and ssh's REASON.
sync_fails() {
    local user=$1 remote=$2 reason=$3 limit=${4:-10} start out rc took
    start=$(now)
    out=$(as_user "$user" timeout 60 secretctl sync init "$remote" 2>&1)
    rc=$?
    took=$(elapsed_since "$start")
    printf '%s\n' "$out"
    echo "note: secretctl sync init $remote exited $rc after $took s: $(printf '%s' "$out" | head -n 1)"
    if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then echo "secretctl sync init $remote exited $rc after $took s (124: a timeout)"; return 1; fi
    awk -v t="$took" -v limit="$limit" 'BEGIN { exit !(t < limit) }' || { echo "it took $took s, expected under $limit"; return 1; }
    case $out in *git*"$remote"*"$reason"*) return 0 ;; esac
    echo "the message does not name git, $remote and '$reason'"
    return 1
}
# The same at a server that accepts the connection and never answers (a stalled host): ssh
# gives up after its ConnectTimeout (15 s, as secretd runs it), and the call fails with git's
# word, not with a D-Bus "Timeout was reached".
sync_silent_start() {
    systemd-run --unit=e2e-silent --quiet python3 -c '
import socket, sys
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(sys.argv[1])))
server.listen(16)
held = []
while True:
    held.append(server.accept()[0])' "$SYNC_SILENT_PORT" || return 1
    for _ in $(seq 50); do
        python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$SYNC_SILENT_PORT" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "the silent server does not listen on $SYNC_SILENT_PORT"
    return 1
}
# ssh's ConnectTimeout is 15 s: under 20, with git's message and no reason of ssh's to look for.
sync_silent() { sync_fails bob "ssh://git@localhost:$SYNC_SILENT_PORT/~/sync.git" "" 20; }
# Once the stalled try is over, the keyring is free again at once: the next sync init gets
# ssh's own error.
sync_free_again() { sync_fails bob "ssh://git@localhost:2222/~/sync.git" "Connection refused"; }

# sync_status USER PYTHON [ARGUMENT...]: USER's secretctl sync status --json holds PYTHON, an
# expression of s (the status) and a (the arguments).
sync_status() {
    local user=$1 test=$2 out
    shift 2
    out=$(as_user "$user" timeout 60 secretctl sync status --json 2>&1) ||
        { printf '%s\n' "$out"; echo "secretctl sync status --json as $user failed"; return 1; }
    printf '%s\n' "$out" | python3 -c '
import json, sys
text = sys.stdin.read()
try:
    s = json.loads(text)
except ValueError:
    sys.exit("secretctl sync status --json printed no JSON: " + text)
a = sys.argv[3:]
if not eval(sys.argv[1]):
    sys.exit("%s: sync status %s; expected %s (a = %s)" % (sys.argv[2], text.strip(), sys.argv[1], a))' "$test" "$user" "$@"
}
# eventually SECONDS COMMAND...: COMMAND succeeds within SECONDS (tried every half second);
# prints how long it took, or COMMAND's last output.
eventually() {
    local limit=$1 start out
    shift
    start=$(now)
    while true; do
        if out=$("$@" 2>&1); then
            echo "note: after $(elapsed_since "$start") s"
            return 0
        fi
        awk -v t="$(elapsed_since "$start")" -v l="$limit" 'BEGIN { exit !(t >= l) }' && break
        sleep 0.5
    done
    printf '%s\n' "$out"
    echo "not within $limit s"
    return 1
}
# reads USER SERVICE ACCOUNT SECRET: secretctl get as USER prints SECRET (named, not given, so
# that no secret is in a command line or the log).
reads() { [ "$(as_user "$1" timeout 30 secretctl get "$2" "$3" 2>&1)" = "${!4}" ] || { echo "$1's $2 $3 is not \$$4"; return 1; }; }
reads_not() {
    local out
    if out=$(as_user "$1" timeout 30 secretctl get "$2" "$3" 2>&1); then echo "$1 reads $2 $3"; return 1; fi
    return 0
}
secret_tool_reads() {
    [ "$(as_user "$1" timeout 30 secret-tool lookup service "$2" account "$3" 2>&1)" = "${!4}" ] && return 0
    echo "secret-tool lookup service $2 account $3 as $1 does not print \$$4"
    return 1
}

sync_store() {
    printf '%s' "$SECRET_SYNC" | as_user alice secretctl set --label "$SYNC_LABEL" --comment "$SYNC_COMMENT" com.example.sync alice &&
        printf '%s' "$SECRET_SYNC_DEVICE" | as_user alice secretctl set --accessible when-unlocked-device-only com.example.sync-device alice
}
sync_init() {
    local out device
    out=$(as_user alice timeout 60 secretctl sync init "$SYNC_REMOTE" 2>&1) || { printf '%s\n' "$out"; echo "secretctl sync init failed"; return 1; }
    device=$(printf '%s\n' "$out" | sed -n 's/.*; this machine is device \([0-9a-f]\{32\}\)\.$/\1/p')
    if [ -n "$device" ] && [ "$out" = "The keyring login syncs with $SYNC_REMOTE from now on; this machine is device $device." ]; then
        echo "$device" >"$SYNC_STATE/alice-device"
        return 0
    fi
    printf '%s\n' "$out"
    echo "expected 'The keyring login syncs with $SYNC_REMOTE from now on; this machine is device HEX.'"
    return 1
}
sync_join() {
    local out device code
    out=$(as_user bob timeout 60 secretctl sync join "$SYNC_REMOTE" 2>&1) || { printf '%s\n' "$out"; echo "secretctl sync join failed"; return 1; }
    device=$(printf '%s\n' "$out" | sed -n "s/^This machine is device \([0-9a-f]\{32\}\); it asked to join the vault at .*/\1/p")
    code=$(printf '%s\n' "$out" | sed -n 's/^Its code is \([0-9]\{3\}-[0-9]\{3\}\)\. .*/\1/p')
    if [ -n "$device" ] && [ -n "$code" ] && printf '%s\n' "$out" | grep -qF "it asked to join the vault at $SYNC_REMOTE."; then
        echo "$device" >"$SYNC_STATE/bob-device"
        echo "$code" >"$SYNC_STATE/code"
        echo "note: bob is device $device, code $code"
        return 0
    fi
    printf '%s\n' "$out"
    echo "expected 'This machine is device HEX; it asked to join the vault at $SYNC_REMOTE.' and 'Its code is 123-456.'"
    return 1
}
sync_waiting() {
    sync_status bob 's["waiting_for_approval"] is True and s["code"] == a[0] and s["device"] == a[1] and s["remote"] == a[2]' \
        "$(cat "$SYNC_STATE/code")" "$(cat "$SYNC_STATE/bob-device")" "$SYNC_REMOTE"
}
# alice's status reads the remote; while one of her rounds runs it lists no one: asked again.
sync_pending() {
    eventually 20 sync_status alice \
        '{"device": a[0], "code": a[1]} in s["pending"] and s["devices"] == [a[2]] and s["waiting_for_approval"] is False' \
        "$(cat "$SYNC_STATE/bob-device")" "$(cat "$SYNC_STATE/code")" "$(cat "$SYNC_STATE/alice-device")"
}
sync_wrong_code() {
    local code wrong out rc
    code=$(cat "$SYNC_STATE/code")
    wrong=000-000
    [ "$code" = "$wrong" ] && wrong=000-001
    out=$(as_user alice timeout 60 secretctl sync approve "$(cat "$SYNC_STATE/bob-device")" --code "$wrong" 2>&1)
    rc=$?
    printf '%s\n' "$out"
    [ $rc -eq 6 ] && [[ $out == *"shows another code"* ]] && return 0
    echo "secretctl sync approve with a wrong code exited $rc, expected 6 and 'shows another code'"
    return 1
}
sync_approve() { as_user alice timeout 60 secretctl sync approve "$(cat "$SYNC_STATE/bob-device")" --code "$(cat "$SYNC_STATE/code")"; }
sync_now_bob() {
    local out
    out=$(as_user bob timeout 60 secretctl sync now 2>&1) || { printf '%s\n' "$out"; echo "secretctl sync now failed"; return 1; }
    echo "note: bob's secretctl sync now: $out"
    printf '%s\n' "$out" | grep -qE '^synced: [0-9]+ out, [0-9]+ in, [0-9]+ conflicts resolved$' && return 0
    printf '%s\n' "$out"
    echo "expected 'synced: N out, M in, K conflicts resolved'"
    return 1
}
sync_member() {
    sync_status bob 's["waiting_for_approval"] is False and s["code"] is None and sorted(s["devices"]) == sorted(a)' \
        "$(cat "$SYNC_STATE/alice-device")" "$(cat "$SYNC_STATE/bob-device")"
}
# bob changes alice's item and makes one of his own; neither runs sync now.
sync_change_on_bob() {
    printf '%s' "$SECRET_SYNC_2" | as_user bob secretctl set com.example.sync alice &&
        printf '%s' "$SECRET_SYNC_BOB" | as_user bob secretctl set com.example.sync bob
}
sync_both_arrive() { reads alice com.example.sync alice SECRET_SYNC_2 && reads alice com.example.sync bob SECRET_SYNC_BOB; }
# alice's history of the item lists her version (by its label), which bob's replaced; restored,
# it is the item again, a change that reaches bob by itself.
sync_history() {
    local out number
    out=$(as_user alice timeout 30 secretctl history com.example.sync alice 2>&1) || { printf '%s\n' "$out"; echo "secretctl history failed"; return 1; }
    number=$(printf '%s\n' "$out" | awk -F '\t' -v label="$SYNC_LABEL" '$4 == label { n = $1 } END { print n }')
    [ -n "$number" ] || { printf '%s\n' "$out"; echo "no version labelled '$SYNC_LABEL'"; return 1; }
    echo "$number" >"$SYNC_STATE/version"
    echo "note: secretctl history: $(printf '%s\n' "$out" | tr '\t\n' ' ;')"
}
sync_restore() {
    as_user alice timeout 30 secretctl history com.example.sync alice --restore "$(cat "$SYNC_STATE/version")" &&
        reads alice com.example.sync alice SECRET_SYNC
}
# Every edit so far was made after a sync of what it changed (bob's after alice's init, alice's
# restore after bob's edit had arrived): an edit that wins over what it synced, not a conflict
# (secretd(1), Conflicts: two edits made on two machines before they synced).
sync_no_conflicts() {
    sync_status alice 's["conflicts_resolved"] == 0' && sync_status bob 's["conflicts_resolved"] == 0'
}
# What the repository's host sees: every object of the bare repository, unpacked (git
# cat-file --batch-all-objects --batch, as its user).
sync_remote_sealed() {
    local objects=$SYNC_STATE/objects size name found=""
    runuser -u git -- git -C "$SYNC_REPO" cat-file --batch-all-objects --batch >"$objects" ||
        { echo "git cat-file in $SYNC_REPO failed"; return 1; }
    size=$(wc -c <"$objects")
    [ "$(grep -a -c -F 'secretd sync item' "$objects")" -gt 0 ] || { echo "the repository ($size bytes of objects) holds no item file"; return 1; }
    for name in SECRET_SYNC SECRET_SYNC_2 SECRET_SYNC_BOB SECRET_SYNC_DEVICE SECRET_SYNC_AFTER SECRET_TOOL SECRET_PYTHON SECRET_GIT \
        SYNC_LABEL SYNC_COMMENT; do
        [ "$(grep -a -c -F -- "${!name}" "$objects")" = 0 ] || found="$found \$$name"
    done
    # The service names, the account, the git credential's host, lock events' two secrets.
    for name in com.example example.com alice sync-token bank-pin; do
        [ "$(grep -a -c -F -- "$name" "$objects")" = 0 ] || found="$found '$name'"
    done
    [ -z "$found" ] && { echo "note: $size bytes of objects in $SYNC_REPO, none of the above in them"; return 0; }
    echo "the repository's objects hold:$found"
    return 1
}
sync_remove() {
    as_user alice timeout 60 secretctl sync remove "$(cat "$SYNC_STATE/bob-device")" &&
        eventually 20 sync_status alice 's["devices"] == [a[0]]' "$(cat "$SYNC_STATE/alice-device")"
}
# After the removal, what alice writes cannot be read on bob's machine, whose secretd says it
# was removed (and stops syncing).
sync_after_removal() {
    local out
    printf '%s' "$SECRET_SYNC_AFTER" | as_user alice secretctl set com.example.sync after-removal &&
        as_user alice timeout 60 secretctl sync now || return 1
    out=$(as_user bob timeout 60 secretctl sync now 2>&1) && { printf '%s\n' "$out"; echo "bob's sync now succeeded after his removal"; return 1; }
    [[ $out == *"removed from the vault"* ]] || { printf '%s\n' "$out"; echo "bob's sync now: expected 'removed from the vault'"; return 1; }
    reads_not bob com.example.sync after-removal
}
sync_leave() {
    local user out
    for user in $SYNC_USERS; do
        as_user "$user" timeout 60 secretctl sync leave || return 1
        out=$(as_user "$user" timeout 60 secretctl sync status 2>&1) && { printf '%s\n' "$out"; echo "$user's keyring still syncs"; return 1; }
        [[ $out == *"does not sync"* ]] || { printf '%s\n' "$out"; echo "$user: expected 'does not sync'"; return 1; }
    done
}
sync_stop() {
    local user
    systemctl stop e2e-silent 2>/dev/null
    for user in $SYNC_USERS; do rm -f "$(getent passwd "$user" | cut -d: -f6)/.config/secretd/secretd.conf"; done
    rm -rf "$SYNC_STATE"
}

sync_machines() {
    local alice_holder bob_holder
    mkdir -p "$SYNC_STATE"
    check "sync: a bare repository of the user git on this machine's sshd; alice's and bob's ssh keys authorized, localhost in their known_hosts (ssh-keyscan)" sync_host
    check "sync: sync-interval = 2 in alice's and bob's secretd.conf" sync_config
    SSH_TIMEOUT=400 ssh_password alice "$1" bash "$E2E_DIR/session.sh" hold 400 >/tmp/hold-sync-alice.log 2>&1 &
    alice_holder=$!
    SSH_TIMEOUT=400 ssh_password bob "$PASSWORD_BOB" bash "$E2E_DIR/session.sh" hold 400 >/tmp/hold-sync-bob.log 2>&1 &
    bob_holder=$!
    check "sync: alice's open session has her login keyring unlocked (machine 1)" wait_unlocked alice
    check "sync: bob's open session has his login keyring unlocked (machine 2)" wait_unlocked bob
    check "sync: alice's and bob's own git reach $SYNC_REMOTE over ssh (git ls-remote)" sync_reachable
    check "sync: sync init to a port nothing listens on fails at once, naming git, the remote and ssh's 'Connection refused'" \
        sync_fails bob "ssh://git@localhost:2222/~/sync.git" "Connection refused"
    check "sync: sync init to a host whose key is not in known_hosts fails at once (ssh in batch mode: no question)" \
        sync_fails bob "git@127.0.0.1:sync.git" "Host key verification failed"
    check "sync: sync init to an account that wants a password fails at once (no password prompt)" \
        sync_fails bob "alice@localhost:sync.git" "Permission denied"
    check "sync: alice stores an item (label, comment) and a device-only one" sync_store
    check "sync: alice's secretctl sync init $SYNC_REMOTE says her keyring syncs, and her device" sync_init
    check "sync: bob's secretctl sync join $SYNC_REMOTE says his device and its code" sync_join
    check "sync: bob's sync status --json: waiting for approval, with the code join printed" sync_waiting
    check "sync: alice's sync status --json lists bob's device as pending, with the same code" sync_pending
    check "sync: sync approve with a wrong code approves nothing (exit 6, 'shows another code')" sync_wrong_code
    check "sync: alice's sync approve DEVICE --code CODE" sync_approve
    check "sync: bob's sync now: 'synced: N out, M in, K conflicts resolved'" sync_now_bob
    check "sync: bob's sync status: no longer waiting, both devices in the vault" eventually 20 sync_member
    check "sync: bob's secretctl get reads alice's item" reads bob com.example.sync alice SECRET_SYNC
    check "sync: bob's secret-tool lookup reads alice's item" secret_tool_reads bob com.example.sync alice SECRET_SYNC
    check "sync: bob reads what alice stored before sync init (secret-tool's svc acc)" reads bob svc acc SECRET_TOOL
    check "sync: alice's device-only item stayed on her machine" reads_not bob com.example.sync-device alice
    check "sync: bob changes alice's item and adds one, without sync now" sync_change_on_bob
    check "sync: both reach alice's machine by themselves within 30 s" eventually 30 sync_both_arrive
    check "sync: alice's secretctl history lists her version that bob's replaced" sync_history
    check "sync: secretctl history --restore makes it alice's item again" sync_restore
    check "sync: the restored version reaches bob's machine by itself within 30 s" eventually 30 reads bob com.example.sync alice SECRET_SYNC
    check "sync: edits made one after the other, none concurrent, resolved no conflict (conflicts_resolved 0 on both machines)" \
        sync_no_conflicts
    check "sync: the repository over ssh holds none of the secrets, labels, comments or service names (git cat-file --batch-all-objects)" \
        sync_remote_sealed
    check "sync: alice's sync remove takes bob's device out of the vault" sync_remove
    check "sync: what alice writes after the removal does not reach bob's machine, whose sync now says it was removed from the vault" \
        sync_after_removal
    check "sync: the repository still holds nothing in clear after the removal" sync_remote_sealed
    check "sync: sync leave on both machines; sync status then says the keyring does not sync" sync_leave
    check "sync: a server that accepts the connection and never answers, on port $SYNC_SILENT_PORT" sync_silent_start
    check "sync: sync init at that server fails within 20 s naming git and the remote (ssh's ConnectTimeout; no hang)" sync_silent
    check "sync: after that, bob's keyring is free again at once (the next sync init gets ssh's 'Connection refused')" \
        eventually 20 sync_free_again
    sync_stop
    logout_check "sync" alice
    logout_check "sync" bob
    check "sync: the git user's ssh sessions end" logged_out git
    wait "$alice_holder" "$bob_holder" 2>/dev/null
}

# ---- what is left behind

insecure_memory() {
    ! journalctl --no-pager -o cat | grep -i 'insecure memory' && return 0
    echo "the journal has libgcrypt's insecure-memory warning"
    return 1
}
# secretd logs nothing abnormal when logins end: no lost bus (the unit is stopped before the
# session bus), no complaint from a thread started at the stop.
quiet_logouts() {
    local lines
    lines=$(journalctl --no-pager -o cat _COMM=secretd | grep -E 'lost the connection to the session bus|Failed to set thread priority')
    [ -z "$lines" ] && return 0
    printf '%s\n' "$lines" | head -n 5
    return 1
}
no_secrets_logged() {
    local journal name found=""
    journal=$(journalctl --no-pager -o verbose)
    for name in PASSWORD_1 PASSWORD_2 PASSWORD_3 PASSWORD_4 PASSWORD_5 PASSWORD_BOB PASSWORD_CAROL WRONG_PASSWORD \
        SECRET_TOOL SECRET_PYTHON SECRET_GIT SECRET_GK SECRET_PORTAL \
        SECRET_SYNC SECRET_SYNC_2 SECRET_SYNC_BOB SECRET_SYNC_DEVICE SECRET_SYNC_AFTER; do
        printf '%s' "$journal" | grep -F -- "${!name}" && found="$found $name"
    done
    [ -z "$found" ] && return 0
    echo "the journal contains:$found"
    return 1
}
journal_of_user() {
    [ -n "$(journalctl --no-pager -o cat _UID="$(id -u alice)" | head -n 1)" ] && return 0
    echo "no journal line from alice's processes (is the journal persistent?)"
    return 1
}
man_pages() {
    local page missing=""
    for page in 1:secretd 1:secretctl 5:secretd.conf 8:pam_secretd; do
        MANWIDTH=80 man "${page%%:*}" "${page#*:}" >/dev/null 2>&1 || missing="$missing ${page#*:}(${page%%:*})"
    done
    [ -z "$missing" ] && return 0
    echo "man does not show:$missing"
    return 1
}

# ---- the two boots

first_boot() {
    check "man shows secretd(1), secretctl(1), secretd.conf(5) and pam_secretd(8)" man_pages
    gnome_keyring_user
    system_setup
    session "gnome-keyring replaced for everyone" password carol "$PASSWORD_CAROL" gk_replaced
    logout_check "gnome-keyring replaced for everyone" carol
    check "users alice and bob created with passwords (useradd, chpasswd), root's ssh key for alice" create_users
    session "first login" password alice "$PASSWORD_1" first_login
    logout_check "first login"
    check "wrong password: the ssh login fails and the keyring's files are unchanged" wrong_password
    session "second login" password alice "$PASSWORD_1" password_login "second login (after a wrong password)"
    logout_check "second login"
}

# For one login, secretd.service runs probe.py after it started (see session.sh, sandbox).
# In /run: gone at the next boot.
probe_on() {
    mkdir -p /run/systemd/user/secretd.service.d &&
        printf '[Service]\nExecStartPost=-/usr/bin/python3 %s/probe.py %%t/e2e-probe.txt\n' \
            "$E2E_DIR" >/run/systemd/user/secretd.service.d/e2e-probe.conf
}
probe_off() { rm -rf /run/systemd/user/secretd.service.d; }

second_boot() {
    probe_on
    session "after reboot" password alice "$PASSWORD_1" after_reboot
    logout_check "after reboot"
    probe_off
    session "key login" key alice key_login PASSWORD_1
    logout_check "key login"
    session "activation" key alice activation
    logout_check "activation"
    session "portal" password alice "$PASSWORD_1" portal_app
    logout_check "portal"
    lock_events
    tpm_unlock "$PASSWORD_1"
    sync_machines "$PASSWORD_1"
    check "console login (login(1) on a terminal): secretctl status shows the login keyring unlocked" console_login
    logout_check "console login"

    session "su from bob" password bob "$PASSWORD_BOB" su_from_bob
    logout_check "su from bob" bob
    logout_check "su from bob"
    su_while_logged_in
    check "su - alice as root (no password): the login keyring stays locked" su_as_root
    logout_check "su as root"

    session "passwd" password alice "$PASSWORD_1" run_passwd
    logout_check "passwd"
    session "new password" password alice "$PASSWORD_2" password_login "after passwd, new password"
    logout_check "new password"
    check "after passwd: the old password no longer logs in" old_password_refused

    session "a process of alice's on the login socket" password alice "$PASSWORD_2" socket_reset_refused PASSWORD_2
    logout_check "a process of alice's on the login socket"
    check "journal: the refusal of the reset, and the logins from root's PAM stack" socket_journal
    reset_while_logged_in
    reset_while_locked
    check "chpasswd while logged out: root sets alice's password" root_sets_password "$PASSWORD_5"
    session "after chpasswd while logged out" password alice "$PASSWORD_5" after_root_reset PASSWORD_4
    logout_check "after chpasswd while logged out"
    session "the login after that" password alice "$PASSWORD_5" show_state
    logout_check "the login after that"

    check "journal: no 'insecure memory' warning" insecure_memory
    check "journal: secretd stops quietly at logout (no lost bus, no thread warning)" quiet_logouts
    check "journal: none of the test passwords or secrets" no_secrets_logged
    check "journal: alice's user journal is there (so the two checks above searched it)" journal_of_user
    system_undo
}

case $1 in
first-boot) first_boot ;;
second-boot) second_boot ;;
*) echo "usage: scenario.sh first-boot|second-boot" >&2; exit 2 ;;
esac
