"""Locks the login keyring and unlocks it with its password, ROUNDS times, half a second apart
(LoadTests.manyClients, and the `load` memory scenario of `make bench`).
    locker.py ROUNDS [PASSWORD]      PASSWORD: login-password, the tests' one
Exits 1, printing the error, when an unlock is refused."""
import sys
import time

from prelude import GNOME, LOGIN, SERVICE, call, connect, plain_session

rounds = int(sys.argv[1])
password = (sys.argv[2] if len(sys.argv) > 2 else "login-password").encode()
conn = connect()
session = plain_session(conn)
for _ in range(rounds):
    time.sleep(0.4)
    call(conn, SERVICE, "Lock", "ao", ([LOGIN],))
    time.sleep(0.1)
    try:
        call(conn, GNOME, "UnlockWithMasterPassword", "o(oayays)", (LOGIN, (session, b"", password, "text/plain")))
    except RuntimeError as error:
        print("unlock failed:", error)
        sys.exit(1)
