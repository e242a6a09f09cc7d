# shellcheck shell=bash
# The states make e2e's scenarios declare in their "# needs:" line, sourced by scenario.sh (root,
# inside the booted container) after lib.sh. Bash.
#
# need STATE establishes STATE when it is missing and does nothing when it is there, so that a
# scenario runs alone on a freshly booted machine with the packages installed (E2E_ONLY), and
# the full run, where the scenarios before it left that state, stays as it was. What it does to
# establish a state it reports as checks named "needs STATE: …" (or as the checks of the scenario
# that makes the state); when it cannot, need fails and the scenario is not run.
#
# The states:
#   users            alice and bob with their passwords (PASSWORD_1, PASSWORD_BOB), root's ssh
#                    key authorized for alice: what the scenario users makes
#   setup-system     secretctl setup --system is in force
#   no-setup-system  it is not (undone if it was)
#   carol            carol has gnome-keyring's login keyring with her item (SECRET_GK) and, imported
#                    from it, a login keyring of secretd's: what the scenario gnome-keyring-user makes
#   alice=none       alice (users) has no login keyring; her password is PASSWORD_1
#   alice=N          alice's password is PASSWORD_N (1 to 5), her login keyring opens with it and
#                    holds the items of her first login (secret-tool's, Python keyring's, git's)
#   alice            alice=N for any N (alice=1 when she has none, or when chpasswd-logged-out
#                    left her password and her keyring's apart: alice=split)
# Which password alice's keyring opens with is recorded in STATE_DIR/alice by the scenarios that
# change it (first-login, passwd, the chpasswd ones) and by need; carol's in STATE_DIR/carol.
# STATE_DIR is on disk: it outlives the reboot.

STATE_DIR=/var/lib/e2e-state

# state_set KEY VALUE; state_get KEY: the recorded value of KEY (empty when none).
state_set() { mkdir -p "$STATE_DIR" && printf '%s\n' "$2" >"$STATE_DIR/$1"; }
state_get() { cat "$STATE_DIR/$1" 2>/dev/null; }

# alice_password: the name of the variable holding alice's current password (PASSWORD_N).
alice_password() {
    local n
    n=$(state_get alice)
    case $n in [1-5]) echo "PASSWORD_$n" ;; *) echo PASSWORD_1 ;; esac
}

# alice_login_password: the name of the variable holding the password alice logs in with now
# (alice=split: PASSWORD_5, the one root set last; none or unrecorded: PASSWORD_1).
alice_login_password() {
    local n
    n=$(state_get alice)
    case $n in [1-5]) echo "PASSWORD_$n" ;; split) echo PASSWORD_5 ;; *) echo PASSWORD_1 ;; esac
}

# create_users: alice and bob, as an administrator creates them; root's ssh key for alice.
create_users() {
    useradd -m -s /bin/bash alice && useradd -m -s /bin/bash bob &&
        printf 'alice:%s\nbob:%s\n' "$PASSWORD_1" "$PASSWORD_BOB" | chpasswd &&
        install -d -m 700 /root/.ssh && ssh-keygen -q -t ed25519 -N '' -f /root/.ssh/e2e_key &&
        install -d -m 700 -o alice -g alice ~alice/.ssh &&
        install -m 600 -o alice -g alice /root/.ssh/e2e_key.pub ~alice/.ssh/authorized_keys
}
have_users() { id alice >/dev/null 2>&1 && id bob >/dev/null 2>&1 && [ -f /root/.ssh/e2e_key ]; }

# alice_fresh N: alice logged out, without a login keyring, her password PASSWORD_N.
alice_fresh() {
    local password=PASSWORD_$1
    logged_out alice >/dev/null
    rm -rf /home/alice/.local/share/secretd /home/alice/.config/secretd &&
        printf 'alice:%s\n' "${!password}" | chpasswd
}

# need STATE: STATE is there afterwards (see above), or need fails saying why.
need() {
    local state=$1 was="" n password
    case $state in
    users)
        have_users && return 0
        check "needs users: alice and bob created with passwords, root's ssh key for alice" create_users
        have_users
        ;;
    setup-system)
        setup_in_force && return 0
        check "needs setup-system: secretctl setup --system" expect_status 0 secretctl setup --system
        setup_in_force
        ;;
    no-setup-system)
        setup_in_force || return 0
        check "needs no-setup-system: secretctl setup --system --undo" expect_status 0 secretctl setup --system --undo
        ! setup_in_force
        ;;
    carol)
        [ -n "$(state_get carol)" ] && return 0
        # carol switches to secretd before the administrator does: without setup --system.
        setup_in_force && was=yes && { need no-setup-system || return 1; }
        run_scenario gnome-keyring-user
        [ -n "$was" ] && { need setup-system || return 1; }
        [ -n "$(state_get carol)" ]
        ;;
    alice)
        case $(state_get alice) in [1-5]) return 0 ;; esac
        need alice=1
        ;;
    alice=none)
        need users || return 1
        [ -z "$(state_get alice)" ] || [ "$(state_get alice)" = none ] && return 0
        check "needs alice=none: alice logged out, her login keyring removed, her password PASSWORD_1" alice_fresh 1
        state_set alice none
        ;;
    alice=[1-5])
        n=${state#alice=}
        [ "$(state_get alice)" = "$n" ] && return 0
        need users && need setup-system || return 1
        password=PASSWORD_$n
        check "needs $state: alice logged out, her login keyring removed, her password PASSWORD_$n" alice_fresh "$n"
        session "needs $state: her first login creates the login keyring and stores the first login's items" \
            password alice "${!password}" store_items "needs $state"
        logout_check "needs $state"
        state_set alice "$n"
        ;;
    *)
        echo "unknown state '$state'"
        return 1
        ;;
    esac
}
