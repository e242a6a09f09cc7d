# shellcheck shell=bash
# Helpers of make e2e, sourced by scenario.sh and packages.sh (root, inside the booted container) and by
# session.sh (a user logged in over ssh). Bash.
#
# Every check prints one line, "ok - NAME" or "not ok - NAME (REASON)", followed on failure by
# the output of what failed as "#   " lines; scripts/e2e.sh counts those lines.

E2E_DIR=/usr/local/lib/e2e
# The passwords and secrets of this run (random, so that the journal can be searched for them).
# shellcheck source=/dev/null
[ -r "$E2E_DIR/secrets.env" ] && . "$E2E_DIR/secrets.env"

# pass NAME; fail NAME REASON [OUTPUT]: report a check.
pass() { printf 'ok - %s\n' "$1"; }
fail() {
    printf 'not ok - %s (%s)\n' "$1" "$2"
    [ -n "${3:-}" ] && printf '%s\n' "$3" | sed 's/^/#   /'
    return 0
}
# note TEXT: a line for the log that is not a check.
note() { printf '%s\n' "$*" | sed 's/^/# /'; }

# check NAME COMMAND [ARGUMENT...]: runs COMMAND (usually one of the functions below) and
# reports it: ok when it exits 0, otherwise not ok with the last line it printed as the reason.
# Lines it prints starting with "note: " are kept as notes when it passes (a measurement).
check() {
    local name=$1 out rc reason
    shift
    out=$("$@" 2>&1)
    rc=$?
    if [ $rc -eq 0 ]; then
        pass "$name"
        printf '%s\n' "$out" | sed -n 's/^note: /# /p'
    else
        reason=$(printf '%s\n' "$out" | grep -v '^[[:space:]]*$' | tail -n 1)
        fail "$name" "${reason:-exit status $rc}" "$out"
    fi
}

# expect_status WANT COMMAND...: COMMAND exits with status WANT (prints what it printed).
expect_status() {
    local want=$1 out rc
    shift
    out=$("$@" 2>&1)
    rc=$?
    printf '%s\n' "$out"
    [ "$rc" -eq "$want" ] || { echo "'$*' exited $rc, expected $want"; return 1; }
}

# expect_output WANT COMMAND...: COMMAND exits 0 and prints exactly WANT (one line).
expect_output() {
    local want=$1 out rc
    shift
    out=$("$@" 2>&1)
    rc=$?
    [ "$rc" -eq 0 ] && [ "$out" = "$want" ] && return 0
    printf '%s\n' "$out"
    echo "'$*' exited $rc and printed the above, expected '$want' and exit 0"
    return 1
}

# ---- the login keyring, as the user whose session this is

# state_from_json: reads secretctl status --json (anything before its first "{" line is
# skipped) and prints unlocked, locked or none (there is no login keyring).
state_from_json() {
    sed -n '/^{/,$p' | python3 -c '
import json, sys
text = sys.stdin.read()
try:
    status = json.loads(text)
except ValueError:
    print("secretctl status --json printed no JSON: " + text)
    sys.exit(1)
login = [c for c in status.get("collections", [])
         if c.get("path", "").endswith("/login") or str(c.get("label", "")).lower() == "login"]
print("none" if not login else ("locked" if login[0].get("locked") else "unlocked"))'
}

# login_state: the state of this user's login keyring (as state_from_json).
login_state() {
    local out rc
    out=$(secretctl status --json 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
        printf 'secretctl status --json exited %s: %s\n' "$rc" "$out"
        return 1
    fi
    printf '%s\n' "$out" | state_from_json
}

# keyring_is STATE: the login keyring is unlocked, locked or none.
keyring_is() {
    local state
    state=$(login_state) || { printf '%s\n' "$state"; return 1; }
    [ "$state" = "$1" ] && return 0
    secretctl status 2>&1
    echo "the login keyring is $state, expected $1"
    return 1
}

# elapsed_since START: seconds (one decimal) since START, a value of $(now).
# typed ANSWERS COMMAND...: runs COMMAND on a terminal (pty-drive.py, 60 s at most), typing the
# newline-separated ANSWERS at its prompts; prints what it showed; fails, saying so, unless it exits 0.
typed() {
    local answers=$1 out rc
    shift
    out=$(E2E_ANSWERS=$answers python3 "$E2E_DIR/pty-drive.py" 60 "$@" 2>&1)
    rc=$?
    printf '%s\n' "$out"
    [ $rc -eq 0 ] && return 0
    echo "$1 exited $rc"
    return 1
}
now() { date +%s.%N; }
elapsed_since() { awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.1f", e - s }'; }

# ---- root, inside the container

SSH_OPTIONS=(-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR
    -o ConnectTimeout=10 -o ServerAliveInterval=5)

# ssh_password USER PASSWORD COMMAND: a password login through the container's sshd, as a
# person would (sshpass types the password at ssh's prompt); exit status of ssh, or sshpass's
# 5 when the password was refused. It is ended after SSH_TIMEOUT seconds (60 unless set: a
# login held open in the background for longer sets it).
ssh_password() {
    local user=$1 password=$2
    shift 2
    SSHPASS=$password timeout "${SSH_TIMEOUT:-60}" sshpass -e ssh -n "${SSH_OPTIONS[@]}" -o PubkeyAuthentication=no \
        -o PreferredAuthentications=password,keyboard-interactive "$user@127.0.0.1" "$@"
}

# ssh_key USER COMMAND: a login with root's ssh key (installed for USER), no password.
ssh_key() {
    local user=$1
    shift
    timeout 60 ssh -n "${SSH_OPTIONS[@]}" -o BatchMode=yes -o PreferredAuthentications=publickey \
        -i /root/.ssh/e2e_key "$user@127.0.0.1" "$@"
}

# session NAME HOW USER [PASSWORD] FUNCTION [ARGUMENT...]: logs USER in (HOW is password or key)
# and runs session.sh FUNCTION in that login; reports the login as the check NAME and passes
# on the checks the session printed.
session() {
    local name=$1 how=$2 user=$3 password="" command out rc
    shift 3
    if [ "$how" = password ]; then password=$1; shift; fi
    # ssh hands the remote shell one string: quote each word for it.
    command=$(printf '%q ' bash "$E2E_DIR/session.sh" "$@")
    if [ "$how" = password ]; then
        out=$(ssh_password "$user" "$password" "$command" 2>&1)
    else
        out=$(ssh_key "$user" "$command" 2>&1)
    fi
    rc=$?
    if [ $rc -eq 0 ]; then
        pass "$name: $how login as $user"
        printf '%s\n' "$out"
    else
        fail "$name: $how login as $user" "ssh exited $rc" "$out"
    fi
}

# logged_out USER: ends USER's sessions and waits until the user manager and its secretd are
# gone, so that the next login starts from a locked keyring (logind keeps the manager for
# UserStopDelaySec=10 s after the last session; terminate-user skips that wait).
logged_out() {
    local user=$1 uid _
    uid=$(id -u "$user")
    loginctl terminate-user "$user" >/dev/null 2>&1
    for _ in $(seq 150); do
        if ! systemctl is-active -q "user@$uid.service" && [ ! -e "/run/user/$uid" ] \
            && ! pgrep -u "$uid" >/dev/null; then
            return 0
        fi
        sleep 0.2
    done
    echo "user@$uid.service: $(systemctl is-active "user@$uid.service"); processes: $(pgrep -a -u "$uid" | tr '\n' ';')"
    return 1
}

# logout_check NAME [USER]: the check that USER's (alice's) user manager and secretd stop at logout.
logout_check() { check "$1: ${2:-alice}'s user manager and secretd stop at logout" logged_out "${2:-alice}"; }

# wait_unlocked [USER]: USER's (by default alice's) open session has the login keyring unlocked.
wait_unlocked() {
    local user=${1:-alice} _ state
    for _ in $(seq 100); do
        state=$(as_user "$user" secretctl status --json 2>/dev/null | state_from_json 2>/dev/null)
        [ "$state" = unlocked ] && return 0
        sleep 0.3
    done
    echo "$user's login keyring is ${state:-unreachable} in the open session"
    return 1
}

# as_user USER COMMAND...: COMMAND as USER on USER's running session bus (root's view of a
# session that is open elsewhere).
as_user() {
    local user=$1 uid
    shift
    uid=$(id -u "$user")
    runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$(getent passwd "$user" | cut -d: -f6)" \
        XDG_RUNTIME_DIR="/run/user/$uid" DBUS_SESSION_BUS_ADDRESS="unix:path=/run/user/$uid/bus" "$@"
}

# database_digest USER: sha256 of every file under USER's secretd data directory.
database_digest() {
    local home
    home=$(getent passwd "$1" | cut -d: -f6)
    (cd "$home/.local/share/secretd" 2>/dev/null && find . -type f -print0 | sort -z | xargs -0r sha256sum)
}

# A wrong password: the login fails and the keyring's files do not change.
# wait_session: alice's session bus appears (a login of hers runs), within 30 s.
wait_session() {
    local _
    for _ in $(seq 100); do
        [ -S "/run/user/$(id -u alice)/bus" ] && return 0
        sleep 0.3
    done
    echo "alice's session bus did not appear"
    return 1
}

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

# root_sets_password PASSWORD: root sets alice's password (chpasswd), as an administrator does.
root_sets_password() { printf 'alice:%s\n' "$1" | chpasswd; }

# ---- the packages (/root/debs/DIRECTORY, scripts/e2e.sh put them there: previous, current and
# newer), as root

PACKAGES="secretd secretctl libpam-secretd"
DEBS=/root/debs

# apt_get ARGUMENT...: apt-get as an administrator runs it (no questions), its output kept.
apt_get() { DEBIAN_FRONTEND=noninteractive timeout 300 apt-get -y -o Dpkg::Use-Pty=0 "$@" 2>&1; }

# version_of DIRECTORY: the version of the secretd package in DIRECTORY.
version_of() { dpkg-deb -f "$DEBS/$1"/secretd_*.deb Version; }

# installed_at VERSION: each package is installed, at VERSION.
installed_at() {
    local package status bad=""
    for package in $PACKAGES; do
        status=$(dpkg-query -W -f '${Status} ${Version}' "$package" 2>&1)
        [ "$status" = "install ok installed $1" ] || bad="$bad $package ($status)"
    done
    [ -z "$bad" ] && return 0
    echo "not installed at $1:$bad"
    return 1
}
# apt_install DIRECTORY: apt install of the packages in DIRECTORY, then they are installed.
apt_install() { apt_get install "$DEBS/$1"/*.deb && installed_at "$(version_of "$1")"; }
# apt_downgrade DIRECTORY: the same, to a lower version than the one installed.
apt_downgrade() { apt_get install --allow-downgrades "$DEBS/$1"/*.deb && installed_at "$(version_of "$1")"; }

# ---- the system's files, as root

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
# setup_in_force: secretctl setup --system's PAM lines are in place.
setup_in_force() { grep -q '^[^#]*pam_secretd\.so' /etc/pam.d/common-session; }
no_pam_lines() {
    ! grep -n 'pam_secretd' /etc/pam.d/common-* && return 0
    echo "pam_secretd is still in /etc/pam.d (above)"
    return 1
}
# no_units: nothing of secretd's in /etc/systemd/user (no unit enabled for every user, no record).
no_units() {
    local left
    left=$(find /etc/systemd/user -name '*secret*' 2>/dev/null)
    [ -z "$left" ] && return 0
    printf '%s\n' "$left"
    echo "unit links are left in /etc/systemd/user"
    return 1
}
