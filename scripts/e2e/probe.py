#!/usr/bin/python3
"""Tries what each sandboxing directive of secretd.service forbids, and prints one line per
directive: "DIRECTIVE: allowed" or "DIRECTIVE: blocked (ERRNO)", or a value it reads.

    probe.py FILE    write the lines to FILE (run as ExecStartPost= of secretd.service, from a
                     drop-in make e2e adds for one login: Exec*= commands of a unit run under
                     the same sandbox as its main process)
    probe.py -       print them (run as a unit of the same user manager without those
                     directives, with systemd-run --user: the control)

A directive is in force when the unit's run is blocked where the control is allowed.
"""
import ctypes
import errno
import mmap
import os
import platform
import resource
import socket
import sys
import tempfile

libc = ctypes.CDLL(None, use_errno=True)


def checked(result):
    if result == -1:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
    return result


def attempt(operation):
    try:
        operation()
        return "allowed"
    except OSError as error:
        reason = errno.errorcode.get(error.errno, error.errno)
        if error.strerror and error.strerror.startswith("killed"):
            reason = error.strerror
        return "blocked (%s)" % reason


def in_child(operation):
    """Runs operation in a child process (it would change this one) and raises its error."""
    pid = os.fork()
    if pid == 0:
        try:
            operation()
            os._exit(0)
        except OSError as error:
            os._exit(error.errno or 1)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise OSError(code, os.strerror(code))


def netlink_socket():
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()  # NETLINK_ROUTE


def user_namespace():
    in_child(lambda: checked(libc.unshare(0x10000000)))  # CLONE_NEWUSER


def setuid_bit():
    handle, path = tempfile.mkstemp(dir=directory)
    os.close(handle)
    try:
        os.chmod(path, 0o4700)
    finally:
        os.unlink(path)


def personality():
    previous = checked(libc.personality(0x0008))  # PER_LINUX32
    libc.personality(previous)


def write_execute_memory():
    mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC).close()


def privileged_call():
    os.setuid(os.getuid())  # setuid(2), of the @privileged group; a no-op when allowed


def outside_system_service():
    # open_tree(2) without OPEN_TREE_CLONE opens a path like O_PATH, unprivileged; it is of
    # the @mount group, which @system-service leaves out (and systemd-nspawn allows). x86_64.
    os.close(checked(libc.syscall(428, -100, b"/", 0)))


def foreign_architecture():
    """getpid through the i386 system call entry (int 0x80), from machine code in a mapped
    file (anonymous memory cannot be made executable under MemoryDenyWriteExecute=)."""
    code = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])  # mov eax, 20 (getpid); int 0x80; ret
    handle, path = tempfile.mkstemp(dir=directory)
    os.write(handle, code)
    os.unlink(path)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    address = libc.mmap(None, 4096, mmap.PROT_READ | mmap.PROT_EXEC, mmap.MAP_PRIVATE, handle, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap")
    pid = os.fork()
    if pid == 0:
        result = ctypes.CFUNCTYPE(ctypes.c_int)(address)()
        os._exit(0 if result == os.getpid() else 1)
    _, status = os.waitpid(pid, 0)
    os.close(handle)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        raise OSError(errno.EPERM if number == 31 else errno.ENOSYS, "killed by signal %d" % number)
    if os.waitstatus_to_exitcode(status) != 0:
        raise OSError(errno.EPERM, "refused")


def realtime():
    in_child(lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1)))


def status_field(name):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
    return "?"


target = sys.argv[1]
directory = os.path.dirname(target) if target != "-" else os.environ.get("XDG_RUNTIME_DIR", "/tmp")
lines = [
    "NoNewPrivileges=yes: NoNewPrivs %s" % status_field("NoNewPrivs"),
    "SystemCallFilter (seccomp filters): %s" % status_field("Seccomp_filters"),
    "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6: " + attempt(netlink_socket),
    "RestrictNamespaces=yes: " + attempt(user_namespace),
    "RestrictSUIDSGID=yes: " + attempt(setuid_bit),
    "LockPersonality=yes: " + attempt(personality),
    "MemoryDenyWriteExecute=yes: " + attempt(write_execute_memory),
    "SystemCallFilter=~@privileged: " + attempt(privileged_call),
    "RestrictRealtime=yes: " + attempt(realtime),
    "RLIMIT_RTPRIO (not a directive): %d %d" % resource.getrlimit(resource.RLIMIT_RTPRIO),
    "UMask=0077: Umask %s" % status_field("Umask"),
    "LimitCORE=0: %d %d" % resource.getrlimit(resource.RLIMIT_CORE),
]
if platform.machine() == "x86_64":
    lines.append("SystemCallFilter=@system-service: " + attempt(outside_system_service))
    lines.append("SystemCallArchitectures=native: " + attempt(foreign_architecture))
text = "".join(line + "\n" for line in lines)
if target == "-":
    sys.stdout.write(text)
else:
    with open(target + ".tmp", "w") as out:
        out.write(text)
    os.rename(target + ".tmp", target)
