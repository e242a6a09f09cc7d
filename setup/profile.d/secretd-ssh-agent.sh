# Linked as /etc/profile.d/secretd-ssh-agent.sh by `secretctl setup --system` (`--undo` removes
# the link): a login shell of an ssh login gets SSH_AUTH_SOCK of secretd's SSH agent, unless it
# has one (sshd's, of an agent forwarded with ssh -A), and only when secretd's socket is there.
# pam_secretd.so does this for console and su logins, but not for sshd: sshd copies the PAM
# environment over the forwarded agent's SSH_AUTH_SOCK (pam_secretd(8)).
if [ -z "${SSH_AUTH_SOCK-}" ] && [ -n "${XDG_RUNTIME_DIR-}" ] && [ -S "$XDG_RUNTIME_DIR/secretd/ssh-agent" ] \
    && [ -O "$XDG_RUNTIME_DIR/secretd/ssh-agent" ]; then
    SSH_AUTH_SOCK=$XDG_RUNTIME_DIR/secretd/ssh-agent
    export SSH_AUTH_SOCK
fi
