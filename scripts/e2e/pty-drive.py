#!/usr/bin/python3
"""Runs a program on a pseudo-terminal and types answers at its password prompts, as a person
at a terminal would (su and passwd read passwords from their controlling terminal only).

    E2E_ANSWERS=$'old\nnew\nnew' pty-drive.py SECONDS PROGRAM [ARGUMENT...]

Each line of E2E_ANSWERS is typed, followed by Enter, when the program's output ends in a
prompt that asks for a password ("Password: ", "Current password: ", "Retype new password: ").
The answers are taken out of the environment before the program starts and never printed
(the terminal does not echo them). Each line of E2E_TYPE is typed after that, once the program
has answered the last password and then been quiet for a second (commands for the shell that
`login` starts). Prints everything the program wrote to the terminal and
exits with its exit status, or 124 when it ran longer than SECONDS (it is then killed).
"""
import os
import pty
import re
import select
import signal
import sys
import time

PROMPT = re.compile(rb"password[^\n]*:\s*$", re.IGNORECASE)


def main():
    seconds = float(sys.argv[1])
    argv = sys.argv[2:]
    answers = os.environ.pop("E2E_ANSWERS", "").split("\n")
    answers = [a for a in answers if a != ""]
    typed = [t for t in os.environ.pop("E2E_TYPE", "").split("\n") if t != ""]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    deadline = time.monotonic() + seconds
    output = b""
    pending = b""
    timed_out = False
    reaped = False
    status = 0
    quiet_since = time.monotonic()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            os.kill(pid, signal.SIGKILL)
            break
        ready, _, _ = select.select([fd], [], [], min(left, 0.2))
        if ready:
            try:
                data = os.read(fd, 4096)
            except OSError:  # EIO: no one has the terminal open
                # util-linux's login (Debian 13) hangs the terminal up (vhangup) and opens it
                # again; only a program that exited has closed it for good.
                done, status = os.waitpid(pid, os.WNOHANG)
                if done == 0:
                    time.sleep(0.05)
                    continue
                reaped = True
                break
            if not data:
                break
            output += data
            pending += data
            quiet_since = time.monotonic()
        if answers and PROMPT.search(pending):
            time.sleep(0.1)  # let the program turn echo off and start reading
            os.write(fd, answers.pop(0).encode() + b"\n")
            pending = b""
        elif not answers and typed and time.monotonic() - quiet_since > 1.0:
            os.write(fd, typed.pop(0).encode() + b"\n")
            quiet_since = time.monotonic()
    if not reaped:
        _, status = os.waitpid(pid, 0)
    sys.stdout.write(output.decode(errors="replace").replace("\r\n", "\n"))
    if timed_out:
        sys.stdout.write("\npty-drive: killed after %g s\n" % seconds)
        sys.exit(124)
    sys.exit(os.waitstatus_to_exitcode(status))


main()
