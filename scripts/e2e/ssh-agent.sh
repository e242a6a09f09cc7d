# shellcheck shell=bash
# secretd as every user's SSH agent after `secretctl setup --system` (issue 48): what the ssh-agent
# scenarios share. Sourced by scenarios/NN-ssh-agent*.sh after lib.sh (root, inside the booted
# container); uses lib.sh's check, expect_status, ssh_key, logged_out, logout_check, as_user,
# wait_session and SSH_OPTIONS.

# agent_socket USER: secretd's agent socket in USER's runtime directory.
agent_socket() { printf '/run/user/%s/secretd/ssh-agent' "$(id -u "$1")"; }

# login_shell USER PASSWORD SCRIPT [SSH-OPTION...]: SCRIPT in a login shell (bash -l reads
# /etc/profile and /etc/profile.d, as the shell of an interactive ssh login does) of a password
# ssh login as USER, with the extra ssh options (-A); prints what it printed.
login_shell() {
    local user=$1 password=$2 script=$3
    shift 3
    SSHPASS=$password timeout 60 sshpass -e ssh -n "${SSH_OPTIONS[@]}" "$@" -o PubkeyAuthentication=no \
        -o PreferredAuthentications=password,keyboard-interactive "$user@127.0.0.1" "$(printf '%q ' bash -l -c "$script")"
}

# The key alice adds: made, added and its private file deleted in one login.
AGENT_KEY_SCRIPT='set -e
mkdir -p ~/.ssh
rm -f ~/.ssh/e2e_agent ~/.ssh/e2e_agent.pub
ssh-keygen -q -t ed25519 -N "" -C e2e-agent -f ~/.ssh/e2e_agent
ssh-add ~/.ssh/e2e_agent
rm ~/.ssh/e2e_agent
ssh-add -l | grep -F "$(ssh-keygen -lf ~/.ssh/e2e_agent.pub | cut -d" " -f2)"'
# Lists alice's key (from its public file, which stays) among the agent's.
AGENT_LISTS_SCRIPT='ssh-add -l | grep -F "$(ssh-keygen -lf ~/.ssh/e2e_agent.pub | cut -d" " -f2)"'

# ---- what setup --system changed for the agent

agent_setup_files() {
    local bad="" unit systemd line
    [ "$(readlink /etc/environment.d/60-secretd-ssh-agent.conf)" = /usr/share/secretd/environment.d/60-secretd-ssh-agent.conf ] ||
        bad="$bad /etc/environment.d/60-secretd-ssh-agent.conf"
    [ "$(readlink /etc/profile.d/secretd-ssh-agent.sh)" = /usr/share/secretd/profile.d/secretd-ssh-agent.sh ] ||
        bad="$bad /etc/profile.d/secretd-ssh-agent.sh"
    for unit in gcr-ssh-agent.socket gcr-ssh-agent.service ssh-agent.socket ssh-agent.service; do
        [ -e "/usr/lib/systemd/user/$unit" ] || continue
        [ "$(readlink "/etc/systemd/user/$unit")" = /dev/null ] || bad="$bad $unit (not masked)"
    done
    if [ -e /etc/xdg/autostart/gnome-keyring-ssh.desktop ]; then
        grep -qx 'Hidden=true' /etc/xdg/autostart/gnome-keyring-ssh.desktop || bad="$bad gnome-keyring-ssh.desktop (not hidden)"
    fi
    systemd=$(grep -n '^[^#]*pam_systemd\.so' /etc/pam.d/common-session | head -n 1 | cut -d: -f1)
    line=$(grep -nE '^session[[:space:]]+optional[[:space:]]+pam_secretd\.so ssh_agent ignore=sshd[[:space:]]*$' \
        /etc/pam.d/common-session | head -n 1 | cut -d: -f1)
    [ -n "$systemd" ] && [ -n "$line" ] && [ "$line" -gt "$systemd" ] || bad="$bad common-session (no ssh_agent line after pam_systemd)"
    [ -z "$bad" ] && return 0
    ls -l /etc/environment.d /etc/profile.d /etc/systemd/user 2>&1; cat /etc/pam.d/common-session
    echo "setup --system's agent files:$bad"
    return 1
}

# ---- alice's logins

agent_in_login_shell() {
    local out want
    want=$(agent_socket alice)
    out=$(login_shell alice "$1" 'printf "%s\n" "${SSH_AUTH_SOCK-}"') || { printf '%s\n' "$out"; echo "the ssh login failed"; return 1; }
    [ "$out" = "$want" ] && return 0
    printf '%s\n' "$out"
    echo "SSH_AUTH_SOCK in an ssh login's shell is '$out', expected $want"
    return 1
}
agent_add_key() {
    login_shell alice "$1" "$AGENT_KEY_SCRIPT" && return 0
    echo "ssh-add in an ssh login did not add the key, or ssh-add -l does not list it"
    return 1
}
agent_lists_key() {
    login_shell alice "$1" "$AGENT_LISTS_SCRIPT" && return 0
    echo "ssh-add -l in an ssh login does not list alice's key"
    return 1
}
# ssh onward from a password login, with the key from the keychain and nothing typed: alice's
# key (its private file long deleted) is put in her own authorized_keys, and ssh in BatchMode
# (which never asks for a passphrase) logs in to 127.0.0.1 again through the agent.
agent_ssh_onward() {
    local out
    grep -qF "$(cut -d' ' -f2 /home/alice/.ssh/e2e_agent.pub)" /home/alice/.ssh/authorized_keys 2>/dev/null ||
        cat /home/alice/.ssh/e2e_agent.pub >>/home/alice/.ssh/authorized_keys
    out=$(login_shell alice "$1" 'ssh -n -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
        -o PreferredAuthentications=publickey -o IdentitiesOnly=no alice@127.0.0.1 echo onward-through-the-agent' 2>&1)
    printf '%s\n' "$out" | grep -qx 'onward-through-the-agent' && return 0
    printf '%s\n' "$out"
    echo "ssh onward from the login did not log in with the key from secretd's agent"
    return 1
}
# The user manager (and what it starts: desktops, services) has it from environment.d.
agent_in_user_manager() {
    local out want
    want=$(agent_socket alice)
    out=$(login_shell alice "$1" 'systemctl --user show-environment')
    printf '%s\n' "$out" | grep -qx "SSH_AUTH_SOCK=$want" && return 0
    printf '%s\n' "$out"
    echo "alice's user manager has no SSH_AUTH_SOCK=$want"
    return 1
}
# ssh -A: root's own agent, forwarded, is the one alice's login uses, not secretd's.
agent_forwarded_kept() {
    local out fingerprint first rc
    eval "$(ssh-agent -s)" >/dev/null
    ssh-add -q /root/.ssh/e2e_key 2>/dev/null
    fingerprint=$(ssh-keygen -lf /root/.ssh/e2e_key | cut -d' ' -f2)
    out=$(login_shell alice "$1" 'printf "%s\n" "${SSH_AUTH_SOCK-}"; ssh-add -l' -A 2>&1)
    rc=$?
    ssh-agent -k >/dev/null
    printf '%s\n' "$out"
    first=$(printf '%s\n' "$out" | head -n 1)
    [ $rc -eq 0 ] || { echo "the ssh -A login failed (exit $rc)"; return 1; }
    [[ $first =~ ^/tmp/ssh-[^/]+/agent\.[0-9]+$ ]] || { echo "SSH_AUTH_SOCK is '$first', not sshd's forwarded agent"; return 1; }
    printf '%s\n' "$out" | grep -qF "$fingerprint" || { echo "ssh-add -l does not list root's forwarded key"; return 1; }
    ! printf '%s\n' "$out" | grep -q e2e-agent || { echo "ssh-add -l lists alice's secretd key: not the forwarded agent"; return 1; }
}
# A console login (login(1) on a terminal): the PAM module set it (the login shell's initial
# environment, before any profile script).
agent_console_login() {
    local out want
    want=$(agent_socket alice)
    out=$(E2E_ANSWERS=$1 E2E_TYPE=$'tr "\\0" "\\n" </proc/$$/environ | grep "^SSH_AUTH_SOCK=" | sed "s/^/initial-/"\nexit' \
        timeout 60 python3 "$E2E_DIR/pty-drive.py" 50 login alice 2>&1)
    printf '%s\n' "$out" | grep -q "^initial-SSH_AUTH_SOCK=$want" && return 0
    printf '%s\n' "$out"
    echo "login's shell did not start with SSH_AUTH_SOCK=$want"
    return 1
}
# su - alice while she is logged in elsewhere (her manager runs): PAM sets it.
agent_su_while_logged_in() {
    local holder out want
    want=$(agent_socket alice)
    ssh_key alice sleep 60 >/dev/null 2>&1 &
    holder=$!
    wait_session >/dev/null || { kill "$holder" 2>/dev/null; echo "alice's key login did not start"; return 1; }
    out=$(timeout 60 su - alice -c 'tr "\0" "\n" </proc/$$/environ | grep "^SSH_AUTH_SOCK="' 2>&1)
    kill "$holder" 2>/dev/null
    wait "$holder" 2>/dev/null
    logged_out alice >/dev/null
    [ "$out" = "SSH_AUTH_SOCK=$want" ] && return 0
    printf '%s\n' "$out"
    echo "su - alice did not start with SSH_AUTH_SOCK=$want"
    return 1
}
# A key login leaves the keyring locked: the agent lists nothing until secretctl unlock.
agent_key_login_locked() {
    local out
    out=$(ssh_key alice "$(printf '%q ' bash -l -c '. /usr/local/lib/e2e/lib.sh
ssh-add -l; echo "locked: $?"
printf %s "$PASSWORD_1" | secretctl unlock --password-stdin
'"$AGENT_LISTS_SCRIPT")" 2>&1)
    local rc=$?
    printf '%s\n' "$out"
    printf '%s\n' "$out" | grep -q '^The agent has no identities\.$' && printf '%s\n' "$out" | grep -q '^locked: 1$' ||
        { echo "while locked, ssh-add -l did not say the agent has no identities"; return 1; }
    [ $rc -eq 0 ] || { echo "after secretctl unlock, ssh-add -l does not list alice's key"; return 1; }
}

# ---- after setup --system --undo

agent_undone_files() {
    local left
    left=$(ls -d /etc/environment.d/60-secretd-ssh-agent.conf /etc/profile.d/secretd-ssh-agent.sh \
        /etc/systemd/user/gcr-ssh-agent.* /etc/systemd/user/ssh-agent.socket /etc/systemd/user/ssh-agent.service \
        /etc/systemd/user/secretctl-setup-ssh-agent.masked /etc/systemd/user/secretctl-setup-openssh-agent.masked 2>/dev/null
        grep -n 'ssh_agent' /etc/pam.d/common-* 2>/dev/null
        grep -n 'secretctl setup' /etc/xdg/autostart/gnome-keyring-ssh.desktop 2>/dev/null)
    [ -z "$left" ] && return 0
    printf '%s\n' "$left"
    echo "setup --system --undo left the agent's files above"
    return 1
}
agent_not_in_login_shell() {
    local out
    out=$(login_shell alice "$1" 'printf "%s\n" "${SSH_AUTH_SOCK-}"') || { printf '%s\n' "$out"; return 1; }
    [ "$out" != "$(agent_socket alice)" ] && return 0
    echo "SSH_AUTH_SOCK still names secretd's agent after --undo"
    return 1
}
