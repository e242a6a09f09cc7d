"""A new connection's first call (LookupTests.aroundLookups): SearchItems for account=alice.
Prints how many unlocked and how many locked items it found."""
from prelude import SERVICE, call, connect

conn = connect()
unlocked, locked = call(conn, SERVICE, "SearchItems", "a{ss}", ({"account": "alice"},))
print(len(unlocked), len(locked))
