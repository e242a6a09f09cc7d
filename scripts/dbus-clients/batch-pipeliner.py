"""Sends three ImportPackedItems batches and a SearchItems on one connection without waiting
for the replies (DaemonTests.batchesPipelined): secretd plans a client's next batch while the
one before is written, but keeps the outcome of their order.
    batch-pipeliner.py
Batch A: items 0-999, secret "a N". Batch B, with replace: items 500-1499, secret "b N"; half of
them are A's items in flight when B is planned. Batch C: items 2000-2999, secret "c N". Then a
search for every item, right behind them. Prints as JSON each batch's counts (imported,
replaced, skipped) or error name, how many paths the search found, how many items each of a
few numbers has, and their secrets."""
import json
import struct

from jeepney import MessageType, new_method_call
from jeepney.low_level import HeaderFields

from prelude import ROOT, SERVICE, address, call, connect, plain_session

conn = connect()
session = plain_session(conn)
importing = address(ROOT, "io.github.secretd.Import1")


def text(value):
    data = value.encode()
    return struct.pack("<I", len(data)) + data


def packed(numbers, prefix):
    """The items `numbers` as one byte array (PackedItems), secrets plain."""
    out = [text(session), struct.pack("<I", len(numbers))]
    for n in numbers:
        out.append(text("item %d" % n))
        attributes = {"kind": "pipelined", "n": str(n)}
        out.append(struct.pack("<I", len(attributes)))
        for key, value in attributes.items():
            out += [text(key), text(value)]
        secret = ("%s %d " % (prefix, n)).ljust(64, ".").encode()
        out += [struct.pack("<I", 0), struct.pack("<I", len(secret)) + secret, text("text/plain")]
    return b"".join(out)


def send(method, signature, body, addr=importing):
    serial = next(conn.outgoing_serial)
    conn.send(new_method_call(addr, method, signature, body), serial=serial)
    return serial


sent = {
    "A": send("ImportPackedItems", "sbay", ("", False, packed(range(0, 1000), "a"))),
    "B": send("ImportPackedItems", "sbay", ("", True, packed(range(500, 1500), "b"))),
    "C": send("ImportPackedItems", "sbay", ("", False, packed(range(2000, 3000), "c"))),
    "search": send("SearchItems", "a{ss}", ({"kind": "pipelined"},), SERVICE),
}
answers = {}
order = []
while len(answers) < len(sent):
    message = conn.receive(timeout=120)
    serial = message.header.fields.get(HeaderFields.reply_serial)
    name = next((key for key, value in sent.items() if value == serial), None)
    if name is None:
        continue
    order.append(name)
    if message.header.message_type == MessageType.error:
        answers[name] = message.header.fields.get(HeaderFields.error_name)
    else:
        answers[name] = list(message.body) if name != "search" else len(message.body[0])

copies, secrets = {}, {}
for n in (0, 499, 500, 999, 1000, 1499, 2000, 2999):
    unlocked, _ = call(conn, SERVICE, "SearchItems", "a{ss}", ({"kind": "pipelined", "n": str(n)},))
    copies[n] = len(unlocked)
    if unlocked:
        (found,) = call(conn, SERVICE, "GetSecrets", "aoo", (unlocked, session))
        secrets[n] = bytes(found[unlocked[0]][2]).decode().rstrip(".").strip()
print(json.dumps({"answers": answers, "order": order, "copies": copies, "secrets": secrets}), flush=True)
