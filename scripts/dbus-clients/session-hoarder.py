"""One client holding hundreds of sessions (ClientFaultTests.hundredsOfSessions, and the
`sessions` memory scenario of `make bench`).
Opens 500 sessions (plain and DH in turn), using the first one every 50 openings; then prints as
JSON how many it opened, which still work and the errors of the others, and waits to be killed."""
import json
import time

from secretstorage.dhcrypto import Session as DH, int_to_bytes

from prelude import SERVICE, call, connect

conn = connect()
paths = []
for i in range(500):
    if i % 2:
        body = ("plain", ("s", ""))
    else:
        body = ("dh-ietf1024-sha256-aes128-cbc-pkcs7", ("ay", int_to_bytes(DH().my_public_key)))
    paths.append(call(conn, SERVICE, "OpenSession", "sv", body)[1])
    if i % 50 == 0:
        call(conn, SERVICE, "GetSecrets", "aoo", ([], paths[0]))  # keeps the first one in use
usable, errors = [], set()
for index, path in enumerate(paths):
    try:
        call(conn, SERVICE, "GetSecrets", "aoo", ([], path))
        usable.append(index)
    except RuntimeError as error:
        errors.add(str(error))
print(json.dumps({"opened": len(paths), "usable": usable, "errors": sorted(errors)}), flush=True)
time.sleep(600)
