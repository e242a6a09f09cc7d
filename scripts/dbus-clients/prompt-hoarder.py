"""Asks to unlock the locked login keyring 40 times without ever running the prompts
(ClientFaultTests.promptLimit); prints as JSON how many prompts it got and the errors of the
others, and waits to be killed."""
import json
import time

from prelude import LOGIN, SERVICE, call, connect

conn = connect()
prompts, errors = [], []
for _ in range(40):
    try:
        prompts.append(call(conn, SERVICE, "Unlock", "ao", ([LOGIN],))[1])
    except RuntimeError as error:
        errors.append(str(error))
print(json.dumps({"prompts": len(prompts), "errors": errors}), flush=True)
time.sleep(600)
