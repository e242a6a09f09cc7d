# shellcheck shell=bash
# su - alice as root asks no password, so the keyring stays locked.
# boot: second
# needs: users setup-system alice=1

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

scenario() {
    check "su - alice as root (no password): the login keyring stays locked" su_as_root
    logout_check "su as root"
}
