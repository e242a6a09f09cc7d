# shellcheck shell=bash
# Sync between two machines (alice's and bob's secretd) through a git remote over ssh: init, join,
# approval by code, changes in both directions, history and restore, nothing in clear in the
# repository, removal, leave, and failures that come at once (no hang) for unreachable remotes.
# boot: second
# needs: users setup-system alice=1

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

scenario() { sync_machines "$PASSWORD_1"; }
