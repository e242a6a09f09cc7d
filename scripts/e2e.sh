#!/bin/bash
# make e2e: the packages of make deb installed with apt on a booted Debian 13 and a booted Debian
# 12, driven through real logins, upgraded, downgraded, removed, purged and installed again.
#     scripts/e2e.sh trixie bookworm          (or by number: scripts/e2e.sh 13 12)
# For each release, in turn:
#  1. image    a root of the release built by mmdebstrap from Debian packages only, cached
#              outside the clone (scripts/release-root.sh; its key: the image section below)
#  2. prepare  a fresh copy of the image gets the packages (.build/deb/RELEASE) and, under a lower
#              version, the same packages as the previous version to upgrade from, and under a
#              higher one, with make deb's newer secretd, a newer version to downgrade from; apt downloads
#              their dependencies from Debian's archive into its cache (the machine itself has no
#              network); git's libsecret credential helper, built from the source git ships in the
#              release's build root (make deb's), so that it links that release's libraries
#  3. boot     systemd-nspawn -b: systemd as PID 1, journald, logind, sshd, dbus, user managers
#  4. inside, as root: scripts/e2e/packages.sh install (apt install of the previous version);
#              scenario.sh first-boot (the scenarios of the first boot: the administrator runs
#              `secretctl setup --system`, users log in over ssh with passwords and keys);
#              packages.sh upgrade (apt install of this version while a user is logged in); a
#              reboot; scenario.sh second-boot (the scenarios of the second boot: su, passwd, root
#              resets a password, setup is undone); packages.sh remove (apt remove, apt purge,
#              apt install again, the old keyring opens)
#
# The scenarios are the files scripts/e2e/scenarios/NN-NAME.sh, run in the order of NN; each
# says what it proves, the boot it runs in and the state it needs (scripts/e2e/scenario.sh,
# state.sh). `bash scripts/e2e/scenario.sh list` lists them.
#
# E2E_ONLY=NAME[,NAME...] runs only those scenarios, in their order, on each release given:
# the image is booted and the packages installed (packages.sh install) as in the full run, then
# for each scenario the state it needs is established where missing (alice created, setup
# --system, her keyring at the password the scenario expects, ...) and the scenario runs;
# before the first second-boot scenario the machine is rebooted. No upgrade, no removal. An
# unknown name fails at once, listing the names. For example, on Debian 13 only, with the
# packages make deb built:
#     E2E_ONLY=passwd,login-socket scripts/e2e.sh trixie
#     E2E_ONLY=after-reboot make e2e DEB_RELEASES=trixie
#
# E2E_HOLD=1 only boots the first release's installed machine and waits (see main) so that it
# can be explored.
#
# Every check prints "ok - NAME" or "not ok - NAME (REASON)"; each release ends with
# "RELEASE: N passed, N failed", the run with the line "N passed, N failed" for all of them,
# and exits non-zero when a check failed. Logs: .build/e2e/logs/RELEASE/ (e2e.log: this
# output; prepare.log; console-N.log: the container's console; journal.txt: the container's
# whole journal; secretd.txt: secretd's lines of it). Root only; the network is used only to
# fetch Debian packages, for the image and for apt's cache.
set -u

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$repo/.build/e2e
release=""           # the release under test
logs=""              # its logs
root=""              # this run's machine, removed at the end
machine=e2e-secretd-$$
nspawn=""            # systemd-nspawn's pid while the machine runs
leader=""            # the machine's PID 1 (its systemd), seen from here
times=""

[ "$(id -u)" -eq 0 ] || { echo "e2e.sh: run as root (mmdebstrap, systemd-nspawn)" >&2; exit 1; }
[ $# -gt 0 ] || { echo "usage: e2e.sh RELEASE..." >&2; exit 2; }
# shellcheck source=e2e/lib.sh
. "$repo/scripts/e2e/lib.sh"
# shellcheck source=release-root.sh
. "$repo/scripts/release-root.sh"

seconds_since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }
timed() { times="$times${times:+, }$1 $2 s${3:+ $3}"; note "time: $1 $2 s${3:+ $3}"; }

# ---- image (begin): this section, package list included, is the image's cache key
# The same names on Debian 13 and 12. Nothing that secretd, secretctl or pam_secretd.so alone
# link (libassuan, libtss2, libgcrypt): the packages' Depends must bring those.
PACKAGES=systemd,systemd-sysv,dbus,dbus-user-session,libpam-systemd,libpam-runtime,login,passwd
PACKAGES=$PACKAGES,openssh-server,openssh-client,sshpass,procps,python3,util-linux,man-db
# The clients checked (the helper links libsecret and GLib, which libsecret-tools brings).
PACKAGES=$PACKAGES,libsecret-tools,python3-keyring,python3-secretstorage,git,pinentry-tty
# A software TPM for the TPM slot (the machine has no TPM of its own).
PACKAGES=$PACKAGES,swtpm
# The keyring secretd replaces, as a GNOME desktop has it, and dex to run its XDG autostart
# entries as a desktop session manager would.
PACKAGES=$PACKAGES,gnome-keyring,libpam-gnome-keyring,dex
# The desktop portal and what stands in for a Flatpak app (bubblewrap, xdg-dbus-proxy).
PACKAGES=$PACKAGES,xdg-desktop-portal,bubblewrap,xdg-dbus-proxy
# build_image RELEASE TARGET
build_image() { release_mmdebstrap "$1" "$2" --include="$PACKAGES"; }
# ---- image (end)

image_phase() {
    local key image start
    start=$(date +%s.%N)
    key=$(section_key "$0" image)
    if image=$(cached_root "e2e-$release" "$key" "$logs/image.log" build_image "$release" 2>"$logs/image-cache.txt"); then
        pass "image: Debian $(release_number "$release") root ($(cat "$logs/image-cache.txt" | tr '\n' ' '))"
    else
        fail "image: Debian $(release_number "$release") root built by mmdebstrap" "mmdebstrap failed; see $logs/image.log" "$(cat "$logs/image-cache.txt")"
        return 1
    fi
    timed image "$(seconds_since "$start")"
    start=$(date +%s.%N)
    mkdir "$root" && tar -C "$root" -xf "$image" || { fail "image: extract" "tar failed"; return 1; }
    timed extract "$(seconds_since "$start")"
}

# ---- prepare: the packages, apt's cache, the test's own files

random() { tr -dc "$1" </dev/urandom | head -c 16; }

# repackaged FROM TO VERSION [SECRETD]: the packages in FROM, in TO as VERSION: their files,
# maintainer scripts and dependencies unchanged, their version (and their Depends on each other)
# set to VERSION; with SECRETD, the secretd package carries that program instead of its own.
repackaged() {
    local from=$1 to=$2 to_version=$3 secretd=${4:-} version deb tmp
    version=$(dpkg-deb -f "$from"/secretd_*.deb Version)
    mkdir -p "$to"
    for deb in "$from"/*.deb; do
        tmp=$(mktemp -d)
        dpkg-deb -R "$deb" "$tmp/package" &&
            sed -i -e "s/^Version: $version\$/Version: $to_version/" -e "s/(= $version)/(= $to_version)/g" "$tmp/package/DEBIAN/control" || { rm -rf "$tmp"; return 1; }
        if [ -n "$secretd" ] && [ -e "$tmp/package/usr/bin/secretd" ]; then
            install -m755 "$secretd" "$tmp/package/usr/bin/secretd" &&
                (cd "$tmp/package" && sed -i "s|^[0-9a-f]*  usr/bin/secretd\$|$(md5sum usr/bin/secretd | cut -d' ' -f1)  usr/bin/secretd|" DEBIAN/md5sums) || { rm -rf "$tmp"; return 1; }
        fi
        dpkg-deb -b "$tmp/package" "$to" >/dev/null || { rm -rf "$tmp"; return 1; }
        rm -rf "$tmp"
    done
}

# The previous version, to upgrade from: this version's packages as VERSION~previous. No earlier
# package of secretd exists; what the upgrade proves is dpkg's and the maintainer scripts' part
# (data kept, setup --system's changes kept, no running secretd restarted), which does not depend
# on what the programs' files hold. The programs' own upgrades of their data (the database's
# migrations) are tested by make test.
# The newer version, for the package downgrade (scenario newer-database): VERSION+newer, whose
# secretd is make deb's newer/secretd (one schema migration more than this version's).

# git_helper: git's libsecret credential helper, built from the source git ships (this machine's
# git) in the release's build root that make deb made, so that it links that release's libsecret.
git_helper() {
    local helper=$work/$release/git-credential-libsecret tar tmp
    [ -x "$helper" ] && return 0
    tar=$(find "$RELEASE_CACHE" -maxdepth 1 -name "build-$release-*.tar" | head -n 1)
    [ -n "$tar" ] || { echo "no build root of $release in $RELEASE_CACHE: run make deb"; return 1; }
    tmp=$(mktemp -d /var/tmp/secretd-helper.XXXXXX)
    # In /build: systemd-nspawn mounts a tmpfs of its own on /tmp.
    tar -C "$tmp" -xf "$tar" && install -D -m644 /usr/share/doc/git/contrib/credential/libsecret/git-credential-libsecret.c "$tmp/build/git-credential-libsecret.c" &&
        systemd-nspawn -q -D "$tmp" --register=no --keep-unit --private-network sh -c \
            'gcc -O2 -o /build/git-credential-libsecret /build/git-credential-libsecret.c $(pkg-config --cflags --libs libsecret-1 glib-2.0)' &&
        install -Dm755 "$tmp/build/git-credential-libsecret" "$helper"
    local rc=$?
    rm -rf --one-file-system "$tmp"
    return $rc
}

prepare_phase() {
    local start debs=$repo/.build/deb/$release e2e version
    start=$(date +%s.%N)
    if ! ls "$debs"/secretd_*.deb >/dev/null 2>&1; then
        fail "prepare: the packages for $release are in $debs" "none there: run make deb"
        return 1
    fi
    install -d "$root/root/debs/current"
    cp "$debs"/*.deb "$root/root/debs/current/"
    version=$(dpkg-deb -f "$debs"/secretd_*.deb Version)
    if repackaged "$debs" "$root/root/debs/previous" "$version~previous" >"$logs/prepare.log" 2>&1; then
        pass "prepare: the packages of $(basename "$debs") and, as the previous version, the same under $version~previous"
    else
        fail "prepare: the previous version's packages" "dpkg-deb failed" "$(cat "$logs/prepare.log")"
        return 1
    fi
    if [ ! -x "$debs/newer/secretd" ]; then
        fail "prepare: the newer secretd is in $debs/newer" "none there: make e2e builds it (DEB_NEWER_SECRETD=1 make deb)"
        return 1
    elif repackaged "$debs" "$root/root/debs/newer" "$version+newer" "$debs/newer/secretd" >>"$logs/prepare.log" 2>&1; then
        pass "prepare: as a newer version, $version+newer, with the newer secretd (one schema migration more)"
    else
        fail "prepare: the newer version's packages" "dpkg-deb failed" "$(cat "$logs/prepare.log")"
        return 1
    fi
    # apt's lists and the packages' dependencies, from Debian's archive (this is the only step
    # with network; the machine boots without).
    if systemd-nspawn -q -D "$root" --register=no --keep-unit sh -c \
        'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --download-only /root/debs/previous/*.deb' \
        >>"$logs/prepare.log" 2>&1; then
        pass "prepare: apt update, and apt downloads what the packages depend on into its cache ($(find "$root/var/cache/apt/archives" -name '*.deb' | wc -l) packages)"
    else
        fail "prepare: apt downloads what the packages depend on" "apt-get failed; see $logs/prepare.log" "$(tail -n 20 "$logs/prepare.log")"
        return 1
    fi
    if git_helper >>"$logs/prepare.log" 2>&1; then
        install -Dm755 "$work/$release/git-credential-libsecret" "$root/usr/local/bin/git-credential-libsecret"
    else
        fail "prepare: git's libsecret credential helper builds" "see $logs/prepare.log" "$(tail -n 20 "$logs/prepare.log")"
        return 1
    fi
    timed prepare "$(seconds_since "$start")"

    e2e=$root/usr/local/lib/e2e
    install -d "$e2e"
    install -m644 "$repo"/scripts/e2e/{lib.sh,state.sh,scenario.sh,session.sh,packages.sh,ssh-agent.sh,pty-drive.py,probe.py} "$e2e/"
    install -d "$e2e/scenarios"
    install -m644 "$repo"/scripts/e2e/scenarios/*.sh "$e2e/scenarios/"
    # Random passwords and secrets (other alphabets for each of alice's passwords: passwd
    # refuses a new password too similar to the old one), so the journal can be searched.
    {
        echo "PASSWORD_1=$(random a-m0-4)"
        echo "PASSWORD_2=$(random n-z5-9)"
        echo "PASSWORD_3=$(random A-M0-4)"
        echo "PASSWORD_4=$(random N-Z5-9)"
        echo "PASSWORD_5=$(random a-m5-9)"
        echo "PASSWORD_BOB=$(random a-z0-9)"
        echo "PASSWORD_CAROL=$(random a-z0-9)"
        echo "PASSWORD_DAVE=$(random a-z0-9)"
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
        echo "SECRET_LIFECYCLE=life-$(random a-z0-9)"
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
    local n=$1 start _ state
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
    for _ in $(seq 100); do
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
    for _ in $(seq 100); do
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
    local _
    for _ in $(seq $(($1 * 10))); do
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

# run SCRIPT PHASE [ARGUMENT...]: scripts/e2e/SCRIPT PHASE ... as root inside the machine.
run() {
    local start rc script=$1
    shift
    start=$(date +%s.%N)
    inside timeout 900 bash "/usr/local/lib/e2e/$script" "$@"
    rc=$?
    [ $rc -eq 0 ] || fail "$script $* runs to its end" "exit status $rc (124: killed after 900 s)"
    timed "$script $*" "$(seconds_since "$start")"
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
    rm -rf --one-file-system "$root"
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

# only_scenarios: E2E_ONLY's scenarios (only_first, only_second) on the installed machine, the
# state each needs first; before the second boot's, a reboot (their needs established before it).
only_scenarios() {
    note "E2E_ONLY: first boot: ${only_first:-none}; second boot: ${only_second:-none}"
    [ -n "$only_first" ] && run scenario.sh first-boot "$only_first"
    [ -n "$only_second" ] || return 0
    run scenario.sh needs "${only_second%%,*}"
    reboot_machine || return
    run scenario.sh second-boot "$only_second"
}

# main_release RELEASE: the whole run on one release.
main_release() {
    trap cleanup EXIT
    trap 'exit 130' INT TERM
    echo "# ==== Debian $(release_number "$release") ($release)"
    image_phase || return
    prepare_phase || return
    boot 1 || return
    if [ -n "${E2E_HOLD:-}" ]; then
        # For a person to look around: nsenter -t LEADER -a bash, until the file is removed.
        touch "$work/hold"
        note "holding the machine: nsenter -t $leader -a bash; rm $work/hold to end"
        while [ -e "$work/hold" ]; do sleep 1; done
        return
    fi
    run packages.sh install
    if [ -n "${E2E_ONLY:-}" ]; then
        only_scenarios
        note "times ($release): $times"
        return
    fi
    run scenario.sh first-boot
    run packages.sh upgrade
    reboot_machine || return
    run scenario.sh second-boot
    run packages.sh remove
    note "times ($release): $times"
}

# E2E_ONLY's names, checked before anything is built or booted: only_first and only_second, the
# scenarios of each boot, comma-separated.
only_first="" only_second=""
if [ -n "${E2E_ONLY:-}" ]; then
    selected=$(bash "$repo/scripts/e2e/scenario.sh" select "$E2E_ONLY") || exit 2
    only_first=$(awk '$1 == "first" { print $2 }' <<<"$selected" | paste -sd, -)
    only_second=$(awk '$1 == "second" { print $2 }' <<<"$selected" | paste -sd, -)
fi

remove_stale
all_passed=0 all_failed=0
for release in "$@"; do
    case $release in 12) release=bookworm ;; 13) release=trixie ;; esac
    release_number "$release" >/dev/null || exit 2
    logs=$work/logs/$release
    root=$work/root.$$
    rm -rf "$logs"
    mkdir -p "$logs"
    main_release 2>&1 | tee "$logs/e2e.log"
    passed=$(grep -c '^ok - ' "$logs/e2e.log")
    failed=$(grep -c '^not ok - ' "$logs/e2e.log")
    if [ "$failed" -gt 0 ] && [ -s "$logs/secretd.txt" ]; then
        echo "# secretd's journal ($logs/secretd.txt):"
        sed 's/^/#   /' "$logs/secretd.txt"
    fi
    echo "# $release: $passed passed, $failed failed" | tee -a "$logs/e2e.log"
    all_passed=$((all_passed + passed))
    all_failed=$((all_failed + failed))
    [ -n "${E2E_HOLD:-}" ] && break
done
echo "$all_passed passed, $all_failed failed ($*${E2E_ONLY:+; E2E_ONLY=$E2E_ONLY})"
[ "$all_failed" -eq 0 ] && [ "$all_passed" -gt 0 ]
