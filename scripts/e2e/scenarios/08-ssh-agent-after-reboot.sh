# shellcheck shell=bash
# After the reboot the key ssh-add added (scenario ssh-agent, first boot) is still there: kept
# in the login keyring, listed once the login unlocks it; a key login (keyring locked) lists no
# key until secretctl unlock. Run it with ssh-agent (E2E_ONLY=ssh-agent,ssh-agent-after-reboot).
# boot: second
# needs: users setup-system alice=1

# shellcheck source=../ssh-agent.sh
. "$E2E_DIR/ssh-agent.sh"

scenario() {
    check "ssh agent after reboot: the login's SSH_AUTH_SOCK is secretd's" agent_in_login_shell "$PASSWORD_1"
    logout_check "ssh agent after reboot: SSH_AUTH_SOCK"
    check "ssh agent after reboot: ssh-add -l still lists alice's key (kept in the login keyring)" agent_lists_key "$PASSWORD_1"
    logout_check "ssh agent after reboot: ssh-add -l"
    check "ssh agent after reboot: from a password login, ssh onward logs in with the key from the keychain, nothing typed" \
        agent_ssh_onward "$PASSWORD_1"
    logout_check "ssh agent after reboot: ssh onward"
    check "ssh agent: a key login (keyring locked) lists no key until secretctl unlock, then lists it" agent_key_login_locked
    logout_check "ssh agent: key login"
}
