"""One call with a raw signature and body, the bugs the D-Bus fuzzer found (DBusFuzzTests).
    raw-call.py PATH INTERFACE METHOD SIGNATURE BODY      BODY: a Python expression
Prints the reply's type and body (an error too), or why there was none."""
import sys

from jeepney import new_method_call

from prelude import address, connect

path, interface, method, signature, body = sys.argv[1:6]
conn = connect()
try:
    reply = conn.send_and_get_reply(new_method_call(address(path, interface), method, signature, eval(body)), timeout=30)
    print(reply.header.message_type.name, reply.body)
except Exception as error:
    print("no reply:", type(error).__name__, error)
