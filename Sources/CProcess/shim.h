// Process-level calls for secretd (hardening, memory), for naming threads and for starting
// processes; prctl is variadic, so it is wrapped here.
#include <sys/prctl.h>
#include <sys/resource.h>

/// Makes the process non-dumpable: no core files, and no ptrace by other same-user processes.
static inline int keychain_set_non_dumpable(void) {
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

#include <malloc.h>

/// Hands freed heap memory back to the system (glibc keeps it otherwise).
static inline int keychain_release_free_memory(void) {
    return malloc_trim(0);
}

/// Names the calling thread (at most 15 bytes show in ps and /proc).
static inline int keychain_name_this_thread(const char *name) {
    return prctl(PR_SET_NAME, name, 0, 0, 0);
}

// MARK: Unix sockets (secretd's login control socket, LoginControlSocket.swift)
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/// Whether `fd` is a listening Unix stream socket (one systemd passed).
static inline int keychain_is_listening_unix_socket(int fd) {
    struct sockaddr_un address;
    socklen_t length = sizeof address;
    int type = 0, listening = 0;
    socklen_t size = sizeof type;
    if (getsockname(fd, (struct sockaddr *)&address, &length) != 0 || address.sun_family != AF_UNIX) return 0;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_STREAM) return 0;
    size = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0) return 0;
    return listening;
}

/// Binds and listens on a Unix stream socket at `path` (close-on-exec, mode 0600); -1 with
/// errno on failure. The path must not exist.
static inline int keychain_listen_unix(const char *path) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof address.sun_path) { errno = ENAMETOOLONG; return -1; }
    strcpy(address.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    mode_t old = umask(0177);
    int bound = bind(fd, (struct sockaddr *)&address, sizeof address);
    umask(old);
    if (bound != 0 || listen(fd, 16) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/// Whether something accepts connections at the Unix socket `path` right now.
static inline int keychain_unix_socket_answers(const char *path) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof address.sun_path) return 0;
    strcpy(address.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    int answered = connect(fd, (struct sockaddr *)&address, sizeof address) == 0;
    close(fd);
    return answered;
}

/// Accepts one connection (non-blocking, close-on-exec); -1 when none is waiting.
static inline int keychain_accept(int fd) {
    int connection = accept(fd, NULL, NULL);
    if (connection < 0) return -1;
    int flags = fcntl(connection, F_GETFL);
    if (fcntl(connection, F_SETFD, FD_CLOEXEC) != 0 || flags < 0 || fcntl(connection, F_SETFL, flags | O_NONBLOCK) != 0) {
        close(connection);
        return -1;
    }
    return connection;
}

/// The uid of the process at the other end of the Unix socket `fd`, or -1. (struct ucred's
/// layout, spelled out: glibc declares it only under _GNU_SOURCE, which the Glibc module that
/// owns these headers is not built with.)
static inline long long keychain_peer_uid(int fd) {
    struct { pid_t pid; uid_t uid; gid_t gid; } credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    return (long long)credentials.uid;
}

/// Asks the kernel to attach the sender's credentials to what arrives on `fd` (SO_PASSCRED). Set
/// on a listening socket, it holds for the connections it accepts from their first byte.
static inline int keychain_pass_credentials(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
}

/// Reads up to `count` bytes from the Unix stream socket `fd` as read(2) does, and sets
/// `*sender_uid` to the real uid of the process that sent them, as the kernel attaches it when
/// SO_PASSCRED is set (SCM_CREDENTIALS: a sender may name only its own real, effective or saved
/// uid), or to -1 when none came with them. Descriptors sent along are closed.
static inline long keychain_read_with_sender(int fd, void *buffer, size_t count, long long *sender_uid) {
    struct credentials { pid_t pid; uid_t uid; gid_t gid; };  /* struct ucred, as keychain_peer_uid */
    const int credentials_type = 2;                          /* SCM_CREDENTIALS, GNU-only in glibc */
    union {
        char bytes[CMSG_SPACE(sizeof(struct credentials)) + CMSG_SPACE(16 * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct iovec vector = {.iov_base = buffer, .iov_len = count};
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.bytes, .msg_controllen = sizeof control.bytes};
    *sender_uid = -1;
    ssize_t got = recvmsg(fd, &message, 0x40000000 /* MSG_CMSG_CLOEXEC */);
    if (got < 0) return got;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET) continue;
        if (header->cmsg_type == credentials_type && header->cmsg_len == CMSG_LEN(sizeof(struct credentials))) {
            struct credentials sender;
            memcpy(&sender, CMSG_DATA(header), sizeof sender);
            *sender_uid = (long long)sender.uid;
        } else if (header->cmsg_type == SCM_RIGHTS) {
            size_t descriptors = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t index = 0; index < descriptors; index++) {
                int received;
                memcpy(&received, CMSG_DATA(header) + index * sizeof(int), sizeof received);
                close(received);
            }
        }
    }
    return got;
}

/// Sets close-on-exec on `fd` (a socket systemd passed).
static inline int keychain_set_close_on_exec(int fd) {
    int flags = fcntl(fd, F_GETFD);
    return flags < 0 ? -1 : fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

/// Makes `fd` non-blocking.
static inline int keychain_set_non_blocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// MARK: Starting processes (ProcessSpawning.swift)
#include <spawn.h>

/// glibc 2.34's action that closes every descriptor from `from` on in the child (close_range).
/// glibc declares it only under _GNU_SOURCE, which the Glibc module is not built with.
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
