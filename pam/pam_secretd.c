/* pam_secretd.so: hands the login password to the user's secretd, so that logging in unlocks the
 * login keyring and changing the login password re-wraps it (see pam_secretd(8)).
 *
 *   auth      reads PAM_AUTHTOK (never prompts). If the user's secretd answers right now (a screen
 *             locker runs only auth), sends UNLOCK at once; otherwise keeps a copy for the session.
 *   session   sends that copy as UNLOCK. pam_systemd, before us, has started the user manager,
 *             whose secretd.socket starts secretd when we connect. With the option `ssh_agent`
 *             (a line of its own, pam-auth-update's profile secretd-ssh-agent), the session step
 *             does only this instead: it points SSH_AUTH_SOCK at secretd's SSH agent socket when
 *             the PAM environment has none and that socket is there (secretd.socket listens).
 *   password  sends CHANGE(old, new) once the new password is set.
 *
 * Every decision (create, unlock, refuse, re-wrap) is secretd's: this module only carries the
 * password over the protocol of login-control.h. It never logs, never prompts, never makes a
 * login or a password change fail, and never talks to secretd with root's effective uid: when
 * the host runs as root (login, sshd, su), a forked helper takes the user's groups, gid and
 * effective uid first. It keeps its real (and saved) uid 0 until the request is sent, so that
 * the kernel names root as its sender (SO_PASSCRED): that is how secretd tells root's PAM stack
 * from a process of the user, which may not set the login password without the old one nor
 * create the login keyring (secretd(1), LOGIN). Then it drops root for good and reads the reply.
 *
 * Why C and not Swift: PAM loads modules into sshd, login, su, sudo and display managers, and
 * pam_end dlcloses them. Swift code must not be unloaded (the runtime keeps pointers into a
 * library's metadata, and Swift's own maintainers stopped dlclosing Swift libraries for that
 * reason), and a module carrying its own static Swift runtime would put a second runtime into any
 * host that already has one, which is untested and unsafe. A small C library needing only libc
 * and libpam has neither problem, and keeps what runs inside setuid programs easy to audit.
 * (The Makefile still links it with -z nodelete: once loaded, it stays mapped after pam_end.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_appl.h>
#include <security/pam_modules.h>

#include "login-control.h"

#define EXPORT __attribute__((visibility("default")))

/* The pam_set_data name under which auth keeps the password for the session. */
static const char stash_name[] = "pam_secretd_authtok";

/* Outcomes of an exchange besides secretd's results (enum secretd_control_result, 0 to 2); they
 * are also the exit codes of the helper process. */
enum {
    NOT_REACHED = 100, /* no secretd of the user's to talk to: nothing was sent */
    NO_ANSWER = 101,   /* sent (or tried to), but no valid reply came */
};

/* Everything one exchange needs, prepared before any fork: the helper then makes system calls
 * only (the host may have threads, so a forked child must not allocate). */
struct request {
    uid_t uid;
    gid_t gid;
    char directory[sizeof(((struct sockaddr_un *)0)->sun_path)];
    struct sockaddr_un address;
    unsigned char *frame;
    size_t length;
};

/* Overwrites and frees a string holding a password. */
static void wipe_string(char *text) {
    if (text == NULL) return;
    explicit_bzero(text, strlen(text));
    free(text);
}

/* pam_set_data's cleanup for the stash: runs when the stash is replaced or removed, or at pam_end. */
static void wipe_stash(pam_handle_t *pamh, void *data, int error_status) {
    (void)pamh;
    (void)error_status;
    wipe_string(data);
}

/* The PAM item `item` (PAM_AUTHTOK, PAM_OLDAUTHTOK) when it is set and not empty, else NULL. */
static const char *token(pam_handle_t *pamh, int item) {
    const void *value = NULL;
    if (pam_get_item(pamh, item, &value) != PAM_SUCCESS || value == NULL || *(const char *)value == '\0') return NULL;
    return value;
}

/* Whether the comma-separated `list` holds `name`. */
static bool in_list(const char *list, const char *name) {
    size_t length = strlen(name);
    for (const char *start = list;; ) {
        const char *end = strchrnul(start, ',');
        if (length > 0 && (size_t)(end - start) == length && memcmp(start, name, length) == 0) return true;
        if (*end == '\0') return false;
        start = end + 1;
    }
}

/* Whether the options let the module act for this PAM_SERVICE: `only_if=a,b` names the only
 * services to act for, `ignore=a,b` services to skip. Other options are ignored. */
static bool selected(pam_handle_t *pamh, int argc, const char **argv) {
    const void *item = NULL;
    const char *service = pam_get_item(pamh, PAM_SERVICE, &item) == PAM_SUCCESS && item != NULL ? item : "";
    bool restricted = false, listed = false;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "only_if=", 8) == 0) {
            restricted = true;
            listed = listed || in_list(argv[i] + 8, service);
        } else if (strncmp(argv[i], "ignore=", 7) == 0 && in_list(argv[i] + 7, service)) {
            return false;
        }
    }
    return !restricted || listed;
}

/* Looks up PAM_USER (never prompting) for its uid and gid. */
static bool lookup_user(pam_handle_t *pamh, struct request *request) {
    const void *name = NULL;
    if (pam_get_item(pamh, PAM_USER, &name) != PAM_SUCCESS || name == NULL || *(const char *)name == '\0') return false;
    long suggested = sysconf(_SC_GETPW_R_SIZE_MAX);
    size_t size = suggested > 4096 ? (size_t)suggested : 4096;
    for (;;) {
        char *buffer = malloc(size);
        if (buffer == NULL) return false;
        struct passwd entry, *found = NULL;
        int error = getpwnam_r(name, &entry, buffer, size, &found);
        if (error == 0 && found != NULL) {
            request->uid = entry.pw_uid;
            request->gid = entry.pw_gid;
        }
        free(buffer);
        if (error == 0) return found != NULL;
        if (error != ERANGE || size > ((size_t)1 << 20)) return false;
        size *= 2;
    }
}

/* The directory and path of the socket `name`: $XDG_RUNTIME_DIR of the PAM environment
 * (pam_systemd sets it) when it is an absolute path, else /run/user/UID. */
static bool locate_socket(pam_handle_t *pamh, struct request *request, const char *name) {
    const char *runtime = pam_getenv(pamh, "XDG_RUNTIME_DIR");
    int length = runtime != NULL && runtime[0] == '/'
        ? snprintf(request->directory, sizeof request->directory, "%s/%s", runtime, SECRETD_CONTROL_DIRECTORY)
        : snprintf(request->directory, sizeof request->directory, "/run/user/%lu/%s", (unsigned long)request->uid,
                   SECRETD_CONTROL_DIRECTORY);
    if (length < 0 || (size_t)length >= sizeof request->directory) return false;
    request->address.sun_family = AF_UNIX;
    length = snprintf(request->address.sun_path, sizeof request->address.sun_path, "%s/%s", request->directory, name);
    return length > 0 && (size_t)length < sizeof request->address.sun_path;
}

/* Writes `value` big-endian at `at`. */
static unsigned char *put_u32(unsigned char *at, uint32_t value) {
    at[0] = (unsigned char)(value >> 24);
    at[1] = (unsigned char)(value >> 16);
    at[2] = (unsigned char)(value >> 8);
    at[3] = (unsigned char)value;
    return at + 4;
}

/* Reads a big-endian u32 at `at`. */
static uint32_t get_u32(const unsigned char *at) {
    return (uint32_t)at[0] << 24 | (uint32_t)at[1] << 16 | (uint32_t)at[2] << 8 | at[3];
}

/* Builds the request frame: length, operation, then each string as length + bytes. A password
 * longer than SECRETD_CONTROL_MAX_PASSWORD is not sent at all. */
static bool build_frame(struct request *request, uint32_t operation, const char *const *strings, size_t count) {
    size_t length = 8;
    for (size_t i = 0; i < count; i++) {
        if (strlen(strings[i]) > SECRETD_CONTROL_MAX_PASSWORD) return false;
        length += 4 + strlen(strings[i]);
    }
    unsigned char *frame = malloc(length), *at = frame;
    if (frame == NULL) return false;
    at = put_u32(at, (uint32_t)length); /* at most SECRETD_CONTROL_MAX_FRAME */
    at = put_u32(at, operation);
    for (size_t i = 0; i < count; i++) {
        size_t size = strlen(strings[i]);
        at = put_u32(at, (uint32_t)size);
        memcpy(at, strings[i], size);
        at += size;
    }
    request->frame = frame;
    request->length = length;
    return true;
}

/* Whether the socket's directory is a real directory of the user's that nobody else may enter,
 * and the socket a real socket of the user's (lstat: neither may be a symbolic link). */
static bool safe_location(const struct request *request) {
    struct stat info;
    if (lstat(request->directory, &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != request->uid
        || (info.st_mode & 077) != 0)
        return false;
    return lstat(request->address.sun_path, &info) == 0 && S_ISSOCK(info.st_mode) && info.st_uid == request->uid;
}

/* Whether SECRETD_CONTROL_TIMEOUT_SECONDS have passed since `start`. */
static bool expired(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec - start->tv_sec >= SECRETD_CONTROL_TIMEOUT_SECONDS;
}

/* Sends or receives all `length` bytes: each call is bounded by the socket's timeouts, and no
 * call starts once the timeout has passed since `start` (a peer trickling bytes cannot hold on). */
static bool transfer(int fd, unsigned char *bytes, size_t length, bool sending, const struct timespec *start) {
    while (length > 0 && !expired(start)) {
        ssize_t done = sending ? send(fd, bytes, length, MSG_NOSIGNAL) : recv(fd, bytes, length, 0);
        if (done > 0) {
            bytes += done;
            length -= (size_t)done;
        } else if (done == 0 || errno != EINTR) {
            return false;
        }
    }
    return length == 0;
}

/* Gives up the real and saved uid 0 the helper kept for the kernel to name as the sender (see
 * helper): the user's uids for good, and not traceable (a change of credentials resets that). */
static bool drop_root(const struct request *request) {
    uid_t real, effective, saved;
    return setresuid(request->uid, request->uid, request->uid) == 0 && prctl(PR_SET_DUMPABLE, 0) == 0
        && getresuid(&real, &effective, &saved) == 0 && real == request->uid && effective == request->uid
        && saved == request->uid && setuid(0) != 0;
}

/* One request and its reply, with the user's effective uid: checks the socket's location,
 * connects, checks that the peer is the user's, sends the frame, drops root for good when the
 * helper kept its real uid 0 to vouch for the request (`vouching`), says it has sent everything
 * (so a peer waiting for the end sees it after the drop), and reads the 8-byte reply. Returns
 * secretd's result, NOT_REACHED or NO_ANSWER. */
static int exchange(const struct request *request, bool vouching) {
    if (!safe_location(request)) return NOT_REACHED;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return NOT_REACHED;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    /* SO_SNDTIMEO bounds connect() on a Unix socket too (a full backlog). */
    struct timeval timeout = {.tv_sec = SECRETD_CONTROL_TIMEOUT_SECONDS};
    struct ucred peer;
    socklen_t size = sizeof peer;
    int result = NOT_REACHED;
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) == 0
        && setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) == 0
        && connect(fd, (const struct sockaddr *)&request->address, sizeof request->address) == 0
        && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) == 0 && size == sizeof peer
        && peer.uid == request->uid) {
        unsigned char reply[8];
        result = NO_ANSWER;
        if (transfer(fd, request->frame, request->length, true, &start) && (!vouching || drop_root(request))
            && shutdown(fd, SHUT_WR) == 0 && transfer(fd, reply, sizeof reply, false, &start) && get_u32(reply) == sizeof reply
            && get_u32(reply + 4) <= SECRETD_CONTROL_FAILED)
            result = (int)get_u32(reply + 4);
    }
    close(fd);
    return result;
}

/* The forked helper: default signal handlers (the host's must not run here), then the user's
 * groups and gid for good and the user's effective uid, undumpable (it holds a copy of the
 * host's memory), then the exchange. `vouching` (the host's real uid is 0): the real and saved
 * uid stay 0 until the request is sent, for the kernel to name root as its sender; otherwise
 * the user's uids for good at once. Only system calls: the host may have had other threads. */
static int helper(const struct request *request, bool vouching) {
    struct sigaction standard = {.sa_handler = SIG_DFL};
    sigemptyset(&standard.sa_mask);
    for (int signal = 1; signal < NSIG; signal++)
        if (signal != SIGKILL && signal != SIGSTOP) sigaction(signal, &standard, NULL);
    uid_t kept = vouching ? 0 : request->uid, real, effective, saved;
    if (setgroups(0, NULL) != 0 || setresgid(request->gid, request->gid, request->gid) != 0
        || setresuid(kept, request->uid, kept) != 0 || prctl(PR_SET_DUMPABLE, 0) != 0)
        return NOT_REACHED;
    if (getresuid(&real, &effective, &saved) != 0 || real != kept || effective != request->uid || saved != kept
        || (!vouching && setuid(0) == 0))
        return NOT_REACHED;
    return exchange(request, vouching);
}

/* Runs the exchange as the user: in this process when it already runs as the user (a screen
 * locker), in a forked helper when it runs as root (login, sshd, su), not at all otherwise. The
 * helper vouches for the request when the host's real uid is root's (not a setuid program that
 * a user started, such as passwd or su run by a user). SIGCHLD is at its default meanwhile, so
 * that the host's handler cannot reap our child. */
static int run_as_user(const struct request *request) {
    if (geteuid() == request->uid) return exchange(request, false);
    if (geteuid() != 0) return NOT_REACHED;
    bool vouching = getuid() == 0;
    struct sigaction standard = {.sa_handler = SIG_DFL}, host;
    sigemptyset(&standard.sa_mask);
    if (sigaction(SIGCHLD, &standard, &host) != 0) return NOT_REACHED;
    int result = NOT_REACHED, status;
    pid_t child = fork();
    if (child == 0) _exit(helper(request, vouching));
    if (child > 0) {
        pid_t waited;
        while ((waited = waitpid(child, &status, 0)) < 0 && errno == EINTR) continue;
        result = waited == child && WIFEXITED(status) ? WEXITSTATUS(status) : NO_ANSWER;
    }
    sigaction(SIGCHLD, &host, NULL);
    return result;
}

/* The transport all hooks use: sends `operation` with `count` strings to PAM_USER's secretd.
 * Returns secretd's result, NOT_REACHED (nothing sent) or NO_ANSWER. */
static int send_request(pam_handle_t *pamh, uint32_t operation, const char *const *strings, size_t count) {
    struct request request;
    memset(&request, 0, sizeof request);
    if (!lookup_user(pamh, &request) || !locate_socket(pamh, &request, SECRETD_CONTROL_SOCKET)
        || !build_frame(&request, operation, strings, count))
        return NOT_REACHED;
    int result = run_as_user(&request);
    explicit_bzero(request.frame, request.length);
    free(request.frame);
    return result;
}

/* auth: unlock now if secretd runs, else keep the password for the session. Always PAM_IGNORE:
 * an optional module that answers PAM_SUCCESS becomes the stack's result when no other module set
 * one, and this module authenticates nobody. */
EXPORT int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    const char *password = token(pamh, PAM_AUTHTOK);
    if (password == NULL || !selected(pamh, argc, argv)) return PAM_IGNORE;
    if (send_request(pamh, SECRETD_CONTROL_UNLOCK, &password, 1) == NOT_REACHED) {
        char *copy = strdup(password);
        if (copy != NULL && pam_set_data(pamh, stash_name, copy, wipe_stash) != PAM_SUCCESS) wipe_string(copy);
    }
    return PAM_IGNORE;
}

/* setcred: nothing to do. */
EXPORT int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh, (void)flags, (void)argc, (void)argv;
    return PAM_IGNORE;
}

/* Whether `option` is one of the module's arguments. */
static bool has_option(int argc, const char **argv, const char *option) {
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], option) == 0) return true;
    return false;
}

/* The session step of an `ssh_agent` line: SSH_AUTH_SOCK=<runtime>/secretd/ssh-agent in the PAM
 * environment, unless it holds an SSH_AUTH_SOCK already (the user's own, from pam_env or an
 * earlier module), and only when that socket passes the control socket's checks (the user's
 * socket in the user's 0700 directory): it is there when secretd.socket listens or secretd
 * runs. Nothing is connected to and nothing is sent. */
static void point_at_agent(pam_handle_t *pamh) {
    struct request request;
    memset(&request, 0, sizeof request);
    if (pam_getenv(pamh, "SSH_AUTH_SOCK") != NULL || !lookup_user(pamh, &request)
        || !locate_socket(pamh, &request, SECRETD_SSH_AGENT_SOCKET) || !safe_location(&request))
        return;
    char variable[sizeof "SSH_AUTH_SOCK=" + sizeof request.address.sun_path];
    int length = snprintf(variable, sizeof variable, "SSH_AUTH_SOCK=%s", request.address.sun_path);
    if (length > 0 && (size_t)length < sizeof variable) pam_putenv(pamh, variable);
}

/* session open: with `ssh_agent`, point SSH_AUTH_SOCK at secretd's agent (and leave the password
 * to the module's other session line). Otherwise send the password auth kept, then drop it (the
 * cleanup wipes it); without one (a key, autologin) do nothing: the keyring stays locked until
 * asked for. */
EXPORT int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    if (has_option(argc, argv, "ssh_agent")) {
        if (selected(pamh, argc, argv)) point_at_agent(pamh);
        return PAM_SUCCESS;
    }
    const void *stash = NULL;
    if (pam_get_data(pamh, stash_name, &stash) != PAM_SUCCESS || stash == NULL) return PAM_SUCCESS;
    if (selected(pamh, argc, argv)) {
        const char *password = stash;
        send_request(pamh, SECRETD_CONTROL_UNLOCK, &password, 1);
    }
    pam_set_data(pamh, stash_name, NULL, NULL);
    return PAM_SUCCESS;
}

/* session close: nothing to do (secretd locks by its own rules). */
EXPORT int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh, (void)flags, (void)argc, (void)argv;
    return PAM_SUCCESS;
}

/* password: once the new password is set, send CHANGE(old, new); old is empty when root changes
 * another user's password (secretd decides what that may do). Always PAM_IGNORE: the password
 * change itself must not depend on us. */
EXPORT int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    if (!(flags & PAM_UPDATE_AUTHTOK)) return PAM_IGNORE;
    const char *new_password = token(pamh, PAM_AUTHTOK), *old_password = token(pamh, PAM_OLDAUTHTOK);
    if (new_password == NULL || !selected(pamh, argc, argv)) return PAM_IGNORE;
    const char *strings[] = {old_password != NULL ? old_password : "", new_password};
    send_request(pamh, SECRETD_CONTROL_CHANGE, strings, 2);
    return PAM_IGNORE;
}
