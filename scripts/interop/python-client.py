#!/usr/bin/python3
"""A Secret Service client in Python on secretstorage and jeepney (a pure-Python D-Bus), as
Python's keyring uses it: an encrypted (dh-ietf1024-sha256-aes128-cbc-pkcs7) session, the default
collection, "text/plain". Used by ClientInteropTests.

    python-client.py store LABEL NAME VALUE...   (the secret on stdin)
    python-client.py lookup NAME VALUE...        (prints the secret and its content type)
"""
import sys

import secretstorage


def attributes(pairs):
    if len(pairs) % 2:
        sys.exit("python-client: attributes come in name value pairs")
    return dict(zip(pairs[0::2], pairs[1::2]))


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: python-client.py store LABEL NAME VALUE... | lookup NAME VALUE...")
    connection = secretstorage.dbus_init()
    collection = secretstorage.get_default_collection(connection)
    if sys.argv[1] == "store":
        collection.create_item(sys.argv[2], attributes(sys.argv[3:]), sys.stdin.buffer.read(), replace=True)
    elif sys.argv[1] == "lookup":
        items = list(collection.search_items(attributes(sys.argv[2:])))
        if not items:
            sys.exit("python-client: no item")
        sys.stdout.buffer.write(items[0].get_secret() + b"\n" + items[0].get_secret_content_type().encode() + b"\n")
    else:
        sys.exit(f"python-client: unknown command {sys.argv[1]!r}")


main()
