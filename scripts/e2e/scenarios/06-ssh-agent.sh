# shellcheck shell=bash
# secretd is every user's SSH agent after setup --system: environment.d, profile.d, gcr's agent
# masked and gnome-keyring's hidden, the PAM ssh_agent line; an ssh login's shell, the user
# manager, a console login and su - get SSH_AUTH_SOCK of secretd's agent, ssh -A keeps the
# forwarded one, and ssh-add keeps a key in the login keyring.
# boot: first
# needs: users setup-system alice=1

# shellcheck source=../ssh-agent.sh
. "$E2E_DIR/ssh-agent.sh"

scenario() {
    check "ssh agent: setup --system linked environment.d and profile.d, masked gcr-ssh-agent, hid gnome-keyring's agent, PAM ssh_agent line after pam_systemd" \
        agent_setup_files
    check "ssh agent: an ssh login's shell has SSH_AUTH_SOCK=\$XDG_RUNTIME_DIR/secretd/ssh-agent" agent_in_login_shell "$PASSWORD_1"
    logout_check "ssh agent: SSH_AUTH_SOCK"
    check "ssh agent: ssh-add adds a key there (its file then deleted) and ssh-add -l lists it" agent_add_key "$PASSWORD_1"
    logout_check "ssh agent: ssh-add"
    check "ssh agent: alice's user manager has SSH_AUTH_SOCK of secretd's agent (environment.d)" agent_in_user_manager "$PASSWORD_1"
    logout_check "ssh agent: user manager"
    check "ssh agent: ssh -A keeps the forwarded agent (SSH_AUTH_SOCK is sshd's, ssh-add -l lists root's key)" \
        agent_forwarded_kept "$PASSWORD_1"
    logout_check "ssh agent: ssh -A"
    check "ssh agent: a console login (login(1)) starts with SSH_AUTH_SOCK of secretd's agent (pam_secretd.so ssh_agent)" \
        agent_console_login "$PASSWORD_1"
    logout_check "ssh agent: console login"
    check "ssh agent: su - alice while she is logged in starts with SSH_AUTH_SOCK of secretd's agent" agent_su_while_logged_in
    logout_check "ssh agent: su"
}
