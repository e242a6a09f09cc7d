#!/bin/bash
# make e2e: the installed product on a booted Debian 12, driven through real logins.
#
#  1. image    a Debian 12 root built by mmdebstrap from Debian packages only, cached in
#              .build/e2e/image-KEY.tar (KEY: a hash of the image section below)
#  2. install  `make install PREFIX=/usr DESTDIR=` a fresh copy of the image, with git's libsecret credential helper built here from the
#              source git ships (the same Debian 12, so the binaries fit)
#  3. boot     systemd-nspawn -b: systemd as PID 1, journald, logind, sshd, dbus, user managers
#  4. scenario scripts/e2e/scenario.sh run as root inside: the administrator runs
#              `secretctl setup --system`, users log in over ssh (passwords and keys), use
#              su and passwd, the machine reboots, root resets a password, setup is undone.
#
# E2E_HOLD=1 only boots the installed machine and waits (see main) so that it can be explored.
#
# Every check prints "ok - NAME" or "not ok - NAME (REASON)"; the run ends with the line
# "N passed, N failed" and exits non-zero when a check failed. Logs: .build/e2e/logs/
# (e2e.log: this output; install.log; console-N.log: the container's console; journal.txt:
# the container's whole journal; secretd.txt: secretd's lines of it). Root only; the
# network is used only to fetch Debian packages for the image.
set -u

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$repo/.build/e2e
logs=$work/logs
root=$work/root.$$   # this run's machine, removed at the end
machine=e2e-secretd-$$
nspawn=""            # systemd-nspawn's pid while the machine runs
leader=""            # the machine's PID 1 (its systemd), seen from here
times=""

[ "$(id -u)" -eq 0 ] || { echo "e2e.sh: run as root (mmdebstrap, systemd-nspawn)" >&2; exit 1; }
mkdir -p "$logs"
# shellcheck source=e2e/lib.sh
. "$repo/scripts/e2e/lib.sh"

seconds_since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }
timed() { times="$times${times:+, }$1 $2 s${3:+ $3}"; note "time: $1 $2 s${3:+ $3}"; }

# ---- image (begin): this section, package list included, is the image's cache key
PACKAGES=systemd,systemd-sysv,dbus,dbus-user-session,libpam-systemd,libpam-runtime,login,passwd
PACKAGES=$PACKAGES,openssh-server,openssh-client,sshpass,procps,python3,util-linux,man-db
# The clients checked, and what secretd, secretctl and the helper link.
PACKAGES=$PACKAGES,libsecret-tools,python3-keyring,python3-secretstorage,git,pinentry-tty
PACKAGES=$PACKAGES,libsecret-1-0,libglib2.0-0,libgcrypt20,libsqlite3-0,libassuan0
PACKAGES=$PACKAGES,libtss2-esys-3.0.2-0,libtss2-tctildr0,libtss2-mu0,libtss2-rc0,libtss2-sys1
# A software TPM for the TPM slot (the machine has no TPM of its own).
PACKAGES=$PACKAGES,swtpm
# The keyring secretd replaces, as a GNOME desktop has it, and dex to run its XDG autostart
# entries as a desktop session manager would.
PACKAGES=$PACKAGES,gnome-keyring,libpam-gnome-keyring,dex
# The desktop portal and what stands in for a Flatpak app (bubblewrap, xdg-dbus-proxy).
PACKAGES=$PACKAGES,xdg-desktop-portal,bubblewrap,xdg-dbus-proxy
MIRRORS=("deb http://deb.debian.org/debian bookworm main"
    "deb http://deb.debian.org/debian bookworm-updates main"
    "deb http://deb.debian.org/debian-security bookworm-security main")
build_image() {
    mmdebstrap --variant=minbase --include="$PACKAGES" \
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
        --dpkgopt='path-exclude=/usr/share/info/*' bookworm "$1" "${MIRRORS[@]}"
}
# ---- image (end)

image_phase() {
    local key image start
    key=$(sed -n '/^# ---- image (begin)/,/^# ---- image (end)/p' "$0" | sha256sum | cut -c1-16)
    image=$work/image-$key.tar
    start=$(date +%s.%N)
    if [ -f "$image" ]; then
        pass "image: Debian 12 root (cached, $(basename "$image"))"
        timed image "$(seconds_since "$start")" "(cached)"
    else
        if build_image "$work/image.tmp.$$.tar" >"$logs/image.log" 2>&1; then
            rm -f "$work"/image-*.tar
            mv "$work/image.tmp.$$.tar" "$image"
            pass "image: Debian 12 root built by mmdebstrap"
        else
            rm -f "$work/image.tmp.$$.tar"
            fail "image: Debian 12 root built by mmdebstrap" "mmdebstrap failed; see $logs/image.log" "$(tail -n 20 "$logs/image.log")"
            return 1
        fi
        timed image "$(seconds_since "$start")" "(built)"
    fi
    start=$(date +%s.%N)
    mkdir "$root" && tar -C "$root" -xf "$image" || { fail "image: extract" "tar failed"; return 1; }
    timed extract "$(seconds_since "$start")"
}

# ---- install: the product as `make install PREFIX=/usr` puts it, plus the test's own files

random() { tr -dc "$1" </dev/urandom | head -c 16; }

install_phase() {
    local start helper e2e
    start=$(date +%s.%N)
    # Into the machine's root itself, so that make install sees its dpkg database and leaves
    # the files of its packages alone (gnome-keyring's activation file), as on a real machine.
    (cd "$root" && find . ! -type d | sort) >"$work/before.$$"
    if make -C "$repo" --no-print-directory install PREFIX=/usr DESTDIR="$root" >"$logs/install.log" 2>&1; then
        pass "make install PREFIX=/usr DESTDIR=…"
    else
        fail "make install PREFIX=/usr DESTDIR=…" "make failed; see $logs/install.log" "$(tail -n 20 "$logs/install.log")"
        return 1
    fi
    timed install "$(seconds_since "$start")"
    (cd "$root" && find . ! -type d | sort) | comm -13 "$work/before.$$" - | sed 's|^\.||' >"$work/manifest.$$"
    note "installed:" "$(cat "$work/manifest.$$")"
    if grep -q 'belongs to gnome-keyring; not overwritten' "$logs/install.log"; then
        pass "make install leaves gnome-keyring's org.freedesktop.secrets.service alone (and says so)"
    else
        fail "make install leaves gnome-keyring's org.freedesktop.secrets.service alone" "install.log does not say so" "$(cat "$logs/install.log" | tail -n 20)"
    fi

    helper=$work/git-credential-libsecret
    if [ ! -x "$helper" ]; then
        # shellcheck disable=SC2046 # pkg-config's flags are words
        gcc -O2 -o "$helper" /usr/share/doc/git/contrib/credential/libsecret/git-credential-libsecret.c \
            $(pkg-config --cflags --libs libsecret-1 glib-2.0) >"$logs/git-helper.log" 2>&1 ||
            { fail "install: git's libsecret credential helper builds" "gcc failed" "$(cat "$logs/git-helper.log")"; return 1; }
    fi
    install -Dm755 "$helper" "$root/usr/local/bin/git-credential-libsecret"

    e2e=$root/usr/local/lib/e2e
    install -d "$e2e"
    install -m644 "$repo"/scripts/e2e/{lib.sh,scenario.sh,session.sh,pty-drive.py,probe.py} "$e2e/"
    install -m644 "$work/manifest.$$" "$e2e/manifest"
    # Random passwords and secrets (other alphabets for each of alice's passwords: passwd
    # refuses a new password too similar to the old one), so the journal can be searched.
    {
        echo "PASSWORD_1=$(random a-m0-4)"
        echo "PASSWORD_2=$(random n-z5-9)"
        echo "PASSWORD_3=$(random A-M0-4)"
        echo "PASSWORD_4=$(random N-Z5-9)"
        echo "PASSWORD_BOB=$(random a-z0-9)"
        echo "PASSWORD_CAROL=$(random a-z0-9)"
        echo "WRONG_PASSWORD=$(random a-z0-9)"
        echo "SECRET_TOOL=st-$(random a-z0-9)"
        echo "SECRET_PYTHON=py-$(random a-z0-9)"
        echo "SECRET_GIT=git-$(random a-z0-9)"
        echo "SECRET_GK=gk-$(random a-z0-9)"
        echo "SECRET_PORTAL=app-$(random a-z0-9)"
        echo "SECRET_SYNC=sync-$(random a-z0-9)"
        echo "SECRET_SYNC_2=sync2-$(random a-z0-9)"
        echo "SECRET_SYNC_BOB=syncb-$(random a-z0-9)"
        echo "SECRET_SYNC_DEVICE=syncd-$(random a-z0-9)"
        echo "SECRET_SYNC_AFTER=synca-$(random a-z0-9)"
    } >"$e2e/secrets.env"
    chmod 644 "$e2e/secrets.env" # the users' sessions read it too

    # gnome-keyring's PAM lines as gdm3's /etc/pam.d/gdm-password has them, in sshd's stack:
    # sshd stands in for the display manager of carol, the desktop user (the others log in
    # over ssh, whose stack has no such lines on Debian).
    sed -i -e '/^@include common-auth/a auth [success=1 default=ignore] pam_succeed_if.so quiet user notin carol\nauth optional pam_gnome_keyring.so' \
        -e '/^@include common-session/a session [success=1 default=ignore] pam_succeed_if.so quiet user notin carol\nsession optional pam_gnome_keyring.so auto_start' \
        "$root/etc/pam.d/sshd"
    [ "$(grep -c pam_gnome_keyring "$root/etc/pam.d/sshd")" = 2 ] || { fail "install: gnome-keyring's PAM lines in /etc/pam.d/sshd" "sed found no @include lines"; return 1; }

    echo e2e >"$root/etc/hostname"
    # /etc/hosts as Debian's installer writes it (mmdebstrap leaves it empty): localhost
    # resolves, which the sync checks' ssh to localhost needs.
    printf '127.0.0.1\tlocalhost\n127.0.1.1\te2e\n\n::1\tlocalhost ip6-localhost ip6-loopback\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n' >>"$root/etc/hosts"
    tr -dc 0-9a-f </dev/urandom | head -c 32 >"$root/etc/machine-id"
    echo >>"$root/etc/machine-id"
    mkdir -p "$root/var/log/journal" # persistent: the journal is searched across the reboot
    # Nothing that would reach for the network or run at a random time during the test.
    for unit in apt-daily.timer apt-daily-upgrade.timer man-db.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer; do
        ln -sf /dev/null "$root/etc/systemd/system/$unit"
    done
}

# ---- boot: the machine under systemd-nspawn, and commands inside it

# inside COMMAND...: COMMAND as root in the running machine (all its namespaces, a clean
# environment), the way a root shell on its console would run it.
inside() {
    nsenter -t "$leader" -a -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb "$@"
}

boot() {
    local n=$1 start i state
    start=$(date +%s.%N)
    # There is no systemd or machined on the host (systemd is not PID 1 here), so the machine
    # is neither registered nor given a scope of its own: --register=no --keep-unit (without
    # them nspawn fails with "Failed to open system bus"). --private-network: the machine has
    # only its loopback, so the sshd on 127.0.0.1:22 is its own.
    # --capability=CAP_IPC_LOCK is a container override for something that works on a real
    # host: nspawn's seccomp filter denies mlock (the @memlock group) unless the container
    # keeps CAP_IPC_LOCK, so without it every mlock in the container fails with EPERM
    # (measured: Python's mlock of 1 MiB as alice fails in the container and succeeds for uid
    # 65534 on this host, under the default RLIMIT_MEMLOCK); secretd's VmLck check needs it.
    systemd-nspawn -q -b -D "$root" -M "$machine" --private-network --register=no --keep-unit \
        --capability=CAP_IPC_LOCK </dev/null >"$logs/console-$n.log" 2>&1 &
    nspawn=$!
    leader=""
    for i in $(seq 100); do
        leader=$(pgrep -P "$nspawn" -x systemd | head -n 1)
        [ -n "$leader" ] && break
        alive "$nspawn" || break
        sleep 0.1
    done
    if [ -z "$leader" ]; then
        fail "boot $n: systemd-nspawn starts the machine" "no systemd in it" "$(tail -n 20 "$logs/console-$n.log")"
        return 1
    fi
    # Until the machine's systemd listens on its private socket, systemctl cannot reach it.
    for i in $(seq 100); do
        state=$(inside timeout 120 systemctl is-system-running --wait 2>&1)
        case $state in "Failed to connect"*) sleep 0.1 ;; *) break ;; esac
    done
    if [ "$state" = running ] || [ "$state" = degraded ]; then
        pass "boot $n: the machine boots (systemctl is-system-running: $state)"
    else
        fail "boot $n: the machine boots" "systemctl is-system-running: $state" "$(tail -n 20 "$logs/console-$n.log")"
        return 1
    fi
    [ "$state" = degraded ] && note "failed units:" "$(inside systemctl --failed --no-legend --no-pager)"
    timed "boot $n" "$(seconds_since "$start")"
}

# alive PID: the process runs (not gone, not a zombie waiting to be reaped).
alive() {
    local state
    state=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) && [ -n "$state" ] && [ "$state" != Z ]
}

# wait_exit SECONDS: waits for systemd-nspawn to end and sets exited to its exit status, or to
# "running" when it did not end in time.
exited=""
wait_exit() {
    local i
    for i in $(seq $(($1 * 10))); do
        alive "$nspawn" || break
        sleep 0.1
    done
    if alive "$nspawn"; then exited=running; return 1; fi
    wait "$nspawn"
    exited=$?
}

reboot_machine() {
    local start
    start=$(date +%s.%N)
    inside systemctl reboot
    wait_exit 60
    # A reboot inside ends systemd-nspawn with status 133; it is started again on the same root.
    if [ "$exited" = 133 ]; then
        pass "reboot: the machine shuts down for a reboot (systemd-nspawn exits 133)"
    else
        fail "reboot: the machine shuts down for a reboot" "systemd-nspawn: $exited, expected 133" "$(tail -n 20 "$logs/console-1.log")"
        [ "$exited" = running ] && stop_machine
    fi
    nspawn=""
    timed reboot "$(seconds_since "$start")"
    boot 2
}

scenario() {
    local start rc
    start=$(date +%s.%N)
    inside timeout 900 bash /usr/local/lib/e2e/scenario.sh "$1"
    rc=$?
    [ $rc -eq 0 ] || fail "scenario $1 runs to its end" "exit status $rc (124: killed after 900 s)"
    timed "scenario $1" "$(seconds_since "$start")"
}

save_journal() {
    inside journalctl --no-pager -o short-precise >"$logs/journal.txt" 2>&1
    inside journalctl --no-pager -o short-precise _COMM=secretd >"$logs/secretd.txt" 2>&1
}

stop_machine() {
    [ -n "$nspawn" ] && alive "$nspawn" || return 0
    inside systemctl poweroff >/dev/null 2>&1
    if ! wait_exit 30; then
        kill -TERM "$nspawn" 2>/dev/null
        wait_exit 15 || { kill -KILL "$nspawn" 2>/dev/null; wait "$nspawn" 2>/dev/null; }
    fi
    nspawn=""
}

cleanup() {
    [ -n "$nspawn" ] && alive "$nspawn" && save_journal
    stop_machine
    rm -rf --one-file-system "$root" "$work/manifest.$$" "$work/before.$$"
}

# Machines and files of earlier runs that were killed before they cleaned up.
remove_stale() {
    local dir pid
    for dir in "$work"/root.*; do
        [ -e "$dir" ] || continue
        pid=${dir##*.}
        kill -0 "$pid" 2>/dev/null || rm -rf --one-file-system "$dir"
    done
}

main() {
    trap cleanup EXIT
    trap 'exit 130' INT TERM
    remove_stale
    image_phase || return
    install_phase || return
    boot 1 || return
    if [ -n "${E2E_HOLD:-}" ]; then
        # For a person to look around: nsenter -t LEADER -a bash, until the file is removed.
        touch "$work/hold"
        note "holding the machine: nsenter -t $leader -a bash; rm $work/hold to end"
        while [ -e "$work/hold" ]; do sleep 1; done
        return
    fi
    scenario first-boot
    reboot_machine || return
    scenario second-boot
    note "times: $times"
}

main 2>&1 | tee "$logs/e2e.log"
passed=$(grep -c '^ok - ' "$logs/e2e.log")
failed=$(grep -c '^not ok - ' "$logs/e2e.log")
if [ "$failed" -gt 0 ] && [ -s "$logs/secretd.txt" ]; then
    echo "# secretd's journal ($logs/secretd.txt):"
    sed 's/^/#   /' "$logs/secretd.txt"
fi
echo "$passed passed, $failed failed" | tee -a "$logs/e2e.log"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
