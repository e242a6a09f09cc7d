/* The login control protocol: how pam_secretd.so hands the login password to the user's
 * secretd. This header is its one definition, shared by the PAM module (pam/pam_secretd.c) and
 * secretd (Sources/SecretService/LoginControl*.swift, through the CLoginControl module).
 *
 * Where: a Unix stream socket SECRETD_CONTROL_SOCKET ("control") in the directory
 * SECRETD_CONTROL_DIRECTORY ("secretd", mode 0700) of the user's $XDG_RUNTIME_DIR
 * (/run/user/UID), listened on by the user unit secretd.socket (or by secretd itself when it
 * was not socket-activated). secretd answers only peers of its own uid (SO_PEERCRED); the
 * module talks only to a daemon of the user's uid.
 *
 * A request, all integers unsigned 32-bit big-endian:
 *     u32 frame length (the whole request, these 4 bytes included)
 *     u32 operation (enum secretd_control_operation)
 *     then each string argument as u32 length + that many bytes (no NUL):
 *         UNLOCK  password                  unlock the login keyring, creating it if none exists
 *         CHANGE  old password, new password re-wrap the login keyring (old may be empty: see secretd(1))
 *         PING    (none)                    nothing; starts the daemon through the socket
 * A reply: u32 8, then u32 result (enum secretd_control_result). One request per connection.
 */
#ifndef SECRETD_LOGIN_CONTROL_H
#define SECRETD_LOGIN_CONTROL_H

/** The directory under $XDG_RUNTIME_DIR that holds the socket. */
#define SECRETD_CONTROL_DIRECTORY "secretd"
/** The socket's name in that directory. */
#define SECRETD_CONTROL_SOCKET "control"
/** secretd's SSH agent socket in that directory, which pam_secretd.so's `ssh_agent` option
 * points SSH_AUTH_SOCK at (SSHAgentNames.socketName on the Swift side). */
#define SECRETD_SSH_AGENT_SOCKET "ssh-agent"
/** The longest password either side accepts, in bytes. */
#define SECRETD_CONTROL_MAX_PASSWORD 65536
/** The longest request: header, two strings of the longest password and their lengths
 * (a plain number, so that Swift imports it; the assertion keeps it equal to the sum). */
#define SECRETD_CONTROL_MAX_FRAME 131088
_Static_assert(SECRETD_CONTROL_MAX_FRAME == 8 + 2 * (4 + SECRETD_CONTROL_MAX_PASSWORD), "frame limit");
/** Seconds either side waits for the other to send or receive before giving up. Unlocking
 * runs Argon2id and may first start secretd, so this is generous. */
#define SECRETD_CONTROL_TIMEOUT_SECONDS 20

/** What a request asks for. */
enum secretd_control_operation {
    SECRETD_CONTROL_UNLOCK = 1,
    SECRETD_CONTROL_CHANGE = 2,
    SECRETD_CONTROL_PING = 3,
};

/** What secretd answers. */
enum secretd_control_result {
    /** Done (unlocked, created, re-wrapped, or nothing to do). */
    SECRETD_CONTROL_OK = 0,
    /** The password does not open the login keyring; nothing changed. */
    SECRETD_CONTROL_DENIED = 1,
    /** Refused or impossible (malformed request, locked keyring for a CHANGE without the old
     * password, storage error); nothing changed. */
    SECRETD_CONTROL_FAILED = 2,
};

#endif
