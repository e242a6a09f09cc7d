# shellcheck shell=bash
# setup --system --undo gives the SSH agent back: the environment.d and profile.d links, gcr's
# masks, the PAM ssh_agent line and gnome-keyring's hidden entry are gone, and an ssh login's
# SSH_AUTH_SOCK is no longer secretd's.
# boot: second
# needs: users no-setup-system alice

# shellcheck source=../ssh-agent.sh
. "$E2E_DIR/ssh-agent.sh"

scenario() {
    local password
    password=$(alice_password) # her last password
    check "ssh agent: setup --system --undo removed the environment.d and profile.d links, gcr's masks, the PAM line, the hidden entry" \
        agent_undone_files
    check "ssh agent: after --undo an ssh login's SSH_AUTH_SOCK is not secretd's" agent_not_in_login_shell "${!password}"
    logout_check "ssh agent: after --undo"
}
