#!/bin/bash
# The make e2e scenario, run as root inside the booted container by scripts/e2e.sh:
#     bash /usr/local/lib/e2e/scenario.sh first-boot     (then the machine reboots)
#     bash /usr/local/lib/e2e/scenario.sh second-boot
# What people do on a Debian 12 machine after `make install PREFIX=/usr`: the administrator
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
# dpkg_verify [PACKAGE]: dpkg --verify, without the documentation the image leaves out
# (mmdebstrap's path-exclude, which dpkg reports as missing).
dpkg_verify() {
    dpkg --verify "$@" 2>&1 | grep -Ev '^missing +(c )?/usr/share/(doc|locale|info)(/|$)'
}
# After setup --system --undo: gnome-keyring's package is as dpkg installed it.
gk_restored() {
    local out
    out=$(dpkg_verify gnome-keyring; dpkg-divert --list | grep gnome-keyring)
    [ -z "$out" ] && [ -z "$(find /etc/systemd/user -name 'gnome-keyring*' -lname /dev/null)" ] && return 0
    printf '%s\n' "$out"; find /etc/systemd/user -name 'gnome-keyring*' -lname /dev/null
    echo "gnome-keyring's files differ from its package (dpkg --verify, dpkg-divert, /etc/systemd/user)"
    return 1
}
packages_intact() {
    local out
    # /etc/pam.d/sshd is e2e.sh's own change (gnome-keyring's lines for carol).
    out=$(dpkg_verify | grep -Ev '^\S+ +c /etc/pam\.d/sshd$')
    [ -z "$out" ] && return 0
    printf '%s\n' "$out"
    echo "dpkg --verify reports changed package files"
    return 1
}

no_pam_lines() {
    ! grep -n 'pam_secretd' /etc/pam.d/common-* && return 0
    echo "pam_secretd is still in /etc/pam.d (above)"
    return 1
}
no_units() {
    local left
    left=$(find /etc/systemd/user -name '*secret*' 2>/dev/null)
    [ -z "$left" ] && return 0
    printf '%s\n' "$left"
    echo "unit links are left in /etc/systemd/user"
    return 1
}
system_undo() {
    check "setup --system --undo exits 0" expect_status 0 secretctl setup --system --undo
    check "setup --system --undo: no pam_secretd in /etc/pam.d/common-*" no_pam_lines
    check "setup --system --undo: no secretd unit enabled in /etc/systemd/user" no_units
    check "setup --system --undo: password logins still work" ssh_password alice "$PASSWORD_4" true
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

logout_check() { check "$1: ${2:-alice}'s user manager and secretd stop at logout" logged_out "${2:-alice}"; }

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
wait_unlocked() {
    local i state
    for i in $(seq 100); do
        state=$(as_user alice secretctl status --json 2>/dev/null | state_from_json 2>/dev/null)
        [ "$state" = unlocked ] && return 0
        sleep 0.3
    done
    echo "alice's login keyring is ${state:-unreachable} in her open session"
    return 1
}
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
lock_screen() { loginctl lock-session "$(alice_session)" && wait_state locked; }
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
no_pin_in_journal() { ! journalctl --no-pager -o cat | grep -F 4711; }
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
    check "lock events: loginctl lock-session locks alice's login keyring" lock_screen
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
    for name in PASSWORD_1 PASSWORD_2 PASSWORD_3 PASSWORD_4 PASSWORD_BOB PASSWORD_CAROL WRONG_PASSWORD \
        SECRET_TOOL SECRET_PYTHON SECRET_GIT SECRET_GK SECRET_PORTAL; do
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
not_packaged() {
    local path owned=""
    while read -r path; do
        dpkg -S "$path" >/dev/null 2>&1 && owned="$owned $path ($(dpkg -S "$path" 2>/dev/null | cut -d: -f1))"
    done <"$E2E_DIR/manifest"
    [ -z "$owned" ] && { echo "$(wc -l <"$E2E_DIR/manifest") files, none owned by a package"; return 0; }
    echo "make install wrote files that Debian packages own:$owned"
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
    check "make install wrote no file a Debian package owns (dpkg -S)" not_packaged
    check "make install changed no file of a Debian package (dpkg --verify)" packages_intact
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

    reset_while_logged_in
    check "chpasswd while logged out: root sets alice's password" root_sets_password "$PASSWORD_4"
    session "after chpasswd while logged out" password alice "$PASSWORD_4" after_root_reset
    logout_check "after chpasswd while logged out"
    session "the login after that" password alice "$PASSWORD_4" show_state
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
