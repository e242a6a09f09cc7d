/* io-record.so: an LD_PRELOAD shim that records, in order, what a process does to the files of
 * one directory, for the power-cut test (Tests/SecretServiceTests/PowerCutTests.swift).
 *
 *   IO_RECORD_DIR=/abs/dir IO_RECORD_LOG=/abs/log LD_PRELOAD=io-record.so secretd ...
 *
 * It records only; it decides nothing. Each record is appended to the log (O_APPEND, one
 * writev per record, so records of several processes and threads never interleave) after the
 * call it records has returned successfully; NAME is the file's name inside the directory,
 * "." for the directory itself:
 *   C NAME\n               the file was created (open with O_CREAT, and it did not exist)
 *   W NAME OFFSET LEN\n    followed by the LEN bytes written at OFFSET (pwrite, write)
 *   T NAME SIZE\n          ftruncate, or open with O_TRUNC
 *   S NAME\n               fsync or fdatasync returned 0
 *   U NAME\n               unlink
 *   R FROM TO\n            rename
 *   M NAME\n               a directory was made (mkdir)
 * Files named *-shm are left out: SQLite's shared memory index is rebuilt by whichever
 * connection opens the database first, and it is written through mmap, which no shim sees.
 * Clients write their own lines (A ..., B ...) into the same log. C, libc only: it is loaded
 * into another program's process. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FDS 4096
/* The libc function this one stands in front of. */
#define REAL(name) static __typeof__(name) *real_##name; if (!real_##name) real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *names[MAX_FDS];
static int log_fd = -1;
static char dir[4096];
static size_t dir_length;

static void setup(void) {
    const char *d = getenv("IO_RECORD_DIR"), *l = getenv("IO_RECORD_LOG");
    if (!d || !l || log_fd >= 0) return;
    snprintf(dir, sizeof dir, "%s", d);
    dir_length = strlen(dir);
    while (dir_length > 1 && dir[dir_length - 1] == '/') dir[--dir_length] = 0;
    REAL(open);
    log_fd = real_open(l, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
}

/* The name inside the directory of `path`, or NULL when it is elsewhere or an -shm file. */
static const char *inside(const char *path) {
    setup();
    if (log_fd < 0 || !path || strncmp(path, dir, dir_length) != 0) return NULL;
    const char *rest = path + dir_length;
    if (*rest == 0) return ".";
    if (*rest != '/' || strchr(rest + 1, '/') || !rest[1]) return NULL;
    size_t n = strlen(rest + 1);
    if (n > 4 && strcmp(rest + 1 + n - 4, "-shm") == 0) return NULL;
    return rest + 1;
}

static void record(const char *header, const void *data, size_t length) {
    struct iovec parts[2] = {{(void *)header, strlen(header)}, {(void *)data, length}};
    REAL(writev);
    real_writev(log_fd, parts, data ? 2 : 1);
}

static void opened(int fd, const char *path, int flags, int existed) {
    const char *name = inside(path);
    if (fd < 0 || fd >= MAX_FDS || !name) return;
    char header[4200];
    pthread_mutex_lock(&lock);
    free(names[fd]);
    names[fd] = strdup(name);
    if ((flags & O_CREAT) && !existed) { snprintf(header, sizeof header, "C %s\n", name); record(header, NULL, 0); }
    if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY) { snprintf(header, sizeof header, "T %s 0\n", name); record(header, NULL, 0); }
    pthread_mutex_unlock(&lock);
}


#define OPEN_WRAPPER(function)                                                  \
    int function(const char *path, int flags, ...) {                            \
        REAL(function);                        \
        mode_t mode = 0;                                                         \
        if (flags & (O_CREAT | O_TMPFILE)) {                                    \
            va_list args; va_start(args, flags); mode = va_arg(args, mode_t); va_end(args); \
        }                                                                        \
        int existed = inside(path) ? access(path, F_OK) == 0 : 1;               \
        int fd = real_##function(path, flags, mode);                            \
        int saved = errno; opened(fd, path, flags, existed); errno = saved;     \
        return fd;                                                               \
    }
OPEN_WRAPPER(open)
OPEN_WRAPPER(open64)

#define OPENAT_WRAPPER(function)                                                \
    int function(int at, const char *path, int flags, ...) {                    \
        REAL(function);                   \
        mode_t mode = 0;                                                         \
        if (flags & (O_CREAT | O_TMPFILE)) {                                    \
            va_list args; va_start(args, flags); mode = va_arg(args, mode_t); va_end(args); \
        }                                                                        \
        int absolute = path[0] == '/';                                          \
        int existed = absolute && inside(path) ? access(path, F_OK) == 0 : 1;  \
        int fd = real_##function(at, path, flags, mode);                        \
        int saved = errno; if (absolute) opened(fd, path, flags, existed); errno = saved; \
        return fd;                                                               \
    }
OPENAT_WRAPPER(openat)
OPENAT_WRAPPER(openat64)

int close(int fd) {
    REAL(close);
    if (fd >= 0 && fd < MAX_FDS && names[fd]) {
        pthread_mutex_lock(&lock);
        free(names[fd]);
        names[fd] = NULL;
        pthread_mutex_unlock(&lock);
    }
    return real_close(fd);
}

static void wrote(int fd, off_t offset, const void *data, ssize_t count) {
    if (count <= 0 || fd < 0 || fd >= MAX_FDS || !names[fd]) return;
    char header[4200];
    pthread_mutex_lock(&lock);
    if (names[fd]) {
        snprintf(header, sizeof header, "W %s %lld %lld\n", names[fd], (long long)offset, (long long)count);
        record(header, data, (size_t)count);
    }
    pthread_mutex_unlock(&lock);
}

ssize_t pwrite(int fd, const void *data, size_t count, off_t offset) {
    REAL(pwrite);
    ssize_t done = real_pwrite(fd, data, count, offset);
    int saved = errno; wrote(fd, offset, data, done); errno = saved;
    return done;
}

ssize_t pwrite64(int fd, const void *data, size_t count, off_t offset) {
    REAL(pwrite64);
    ssize_t done = real_pwrite64(fd, data, count, offset);
    int saved = errno; wrote(fd, offset, data, done); errno = saved;
    return done;
}

ssize_t write(int fd, const void *data, size_t count) {
    REAL(write);
    off_t offset = fd >= 0 && fd < MAX_FDS && names[fd] ? lseek(fd, 0, SEEK_CUR) : -1;
    ssize_t done = real_write(fd, data, count);
    int saved = errno; if (offset >= 0) wrote(fd, offset, data, done); errno = saved;
    return done;
}

static void simple(const char *kind, int fd, long long value, int with_value) {
    if (fd < 0 || fd >= MAX_FDS || !names[fd]) return;
    char header[4200];
    pthread_mutex_lock(&lock);
    if (names[fd]) {
        if (with_value) snprintf(header, sizeof header, "%s %s %lld\n", kind, names[fd], value);
        else snprintf(header, sizeof header, "%s %s\n", kind, names[fd]);
        record(header, NULL, 0);
    }
    pthread_mutex_unlock(&lock);
}

#define SYNC_WRAPPER(function)                                                  \
    int function(int fd) {                                                       \
        REAL(function);                                           \
        int result = real_##function(fd);                                       \
        int saved = errno; if (result == 0) simple("S", fd, 0, 0); errno = saved; \
        return result;                                                           \
    }
SYNC_WRAPPER(fsync)
SYNC_WRAPPER(fdatasync)

#define TRUNCATE_WRAPPER(function)                                              \
    int function(int fd, off_t size) {                                           \
        REAL(function);                                    \
        int result = real_##function(fd, size);                                 \
        int saved = errno; if (result == 0) simple("T", fd, (long long)size, 1); errno = saved; \
        return result;                                                           \
    }
TRUNCATE_WRAPPER(ftruncate)
TRUNCATE_WRAPPER(ftruncate64)

/* Records "KIND NAME" for a call on `path` that succeeded, when `path` is inside the directory. */
static void path_record(const char *kind, int result, const char *path) {
    const char *name = inside(path);
    if (result != 0 || !name) return;
    char header[4200];
    snprintf(header, sizeof header, "%s %s\n", kind, name);
    pthread_mutex_lock(&lock); record(header, NULL, 0); pthread_mutex_unlock(&lock);
}

int unlink(const char *path) {
    REAL(unlink);
    int result = real_unlink(path);
    int saved = errno; path_record("U", result, path); errno = saved;
    return result;
}

int mkdir(const char *path, mode_t mode) {
    REAL(mkdir);
    int result = real_mkdir(path, mode);
    int saved = errno; path_record("M", result, path); errno = saved;
    return result;
}

int rename(const char *from, const char *to) {
    REAL(rename);
    int result = real_rename(from, to);
    int saved = errno;
    const char *a = inside(from), *b = inside(to);
    if (result == 0 && (a || b)) {
        char header[8400];
        snprintf(header, sizeof header, "R %s %s\n", a ? a : "-", b ? b : "-");
        pthread_mutex_lock(&lock); record(header, NULL, 0); pthread_mutex_unlock(&lock);
    }
    errno = saved;
    return result;
}
