"""Calls the desktop portal's Secret backend as xdg-desktop-portal does (PortalTests): RetrieveSecret
with the write end of a pipe, then reads the key from the read end.
    portal-client.py retrieve APP_ID [APP_ID ...]   one call per app id, one after the other
    portal-client.py close APP_ID WAIT_FILE         a call, then Request.Close on its handle once
                                                    WAIT_FILE exists (the prompt is showing)
Prints one JSON line per call: {"app": ..., "response": u or null, "error": name or null,
"key": hex of what the pipe carried}."""
import json
import os
import sys
import threading
import time

from jeepney import DBusAddress, MessageType, new_method_call
from jeepney.io.threading import open_dbus_router
from jeepney.low_level import HeaderFields

from prelude import B

PORTAL = "/org/freedesktop/portal/desktop"


def retrieve(router, app, handle, then=None):
    read_end, write_end = os.pipe()
    message = new_method_call(DBusAddress(PORTAL, bus_name=B, interface="org.freedesktop.impl.portal.Secret"),
                              "RetrieveSecret", "osha{sv}", (handle, app, write_end, {}))
    if then is None:
        reply = router.send_and_get_reply(message, timeout=120)
    else:
        result = {}
        waiter = threading.Thread(target=lambda: result.update(reply=router.send_and_get_reply(message, timeout=120)))
        waiter.start()
        then()
        waiter.join()
        reply = result["reply"]
    os.close(write_end)
    os.set_blocking(read_end, False)
    try:
        key = os.read(read_end, 4096)
    except BlockingIOError:
        key = b""
    os.close(read_end)
    line = {"app": app, "response": None, "error": None, "key": key.hex()}
    if reply.header.message_type == MessageType.error:
        line["error"] = reply.header.fields.get(HeaderFields.error_name, "?")
    else:
        line["response"] = reply.body[0]
    print(json.dumps(line), flush=True)


router_context = open_dbus_router(bus="SESSION", enable_fds=True)
router = router_context.__enter__()
mode = sys.argv[1]
if mode == "retrieve":
    for number, app in enumerate(sys.argv[2:]):
        retrieve(router, app, "%s/request/1_%d/t%d" % (PORTAL, os.getpid(), number))
elif mode == "close":
    app, wait_file = sys.argv[2], sys.argv[3]
    handle = "%s/request/1_%d/close" % (PORTAL, os.getpid())

    def close_when_asked():
        deadline = time.monotonic() + 60
        while not os.path.exists(wait_file) and time.monotonic() < deadline:
            time.sleep(0.1)
        # On the same connection, as the frontend closes the requests it made.
        request = DBusAddress(handle, bus_name=B, interface="org.freedesktop.impl.portal.Request")
        closed = router.send_and_get_reply(new_method_call(request, "Close"), timeout=30)
        print(json.dumps({"close": closed.header.message_type.name}), flush=True)

    retrieve(router, app, handle, then=close_when_asked)
router_context.__exit__(None, None, None)
