// The floor of a bulk import (bench/bulk.sh, issue 51 point 6): the store's own insert of N
// items, sealed and indexed by `Store.createItem`, one transaction (one durable commit) per
// batch, with no D-Bus, no access checks and no search for items that exist already. The items
// have the shape of bench/bulk.sh's CSV rows as `secretctl import` makes them: an internet
// password (`xdg:schema`, `server`, `user`, `protocol`), the label `site N` and a 20-byte secret.
//
// usage: keychain-store-floor DIR COUNT [BATCH]   (DIR must not hold a store yet; BATCH 1000)
// Prints one line of JSON: {"items": N, "batch": B, "seconds": S}, S the inserts alone.

import FoundationEssentials
import Glibc
import SecretCrypto
import SecretStore

/// Writes `message` to standard error and exits with `status`.
func fail(_ message: String, status: Int32) -> Never {
    let line = "keychain-store-floor: \(message)\n"
    _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(status)
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, let count = Int(arguments[2]), count > 0 else {
    fail("usage: keychain-store-floor DIR COUNT [BATCH]", status: 64)
}
let batch = arguments.count > 3 ? max(1, Int(arguments[3]) ?? 1000) : 1000

do {
    let store = try Store(directory: URL(fileURLWithPath: arguments[1]))
    let (collection, keys) = try store.createCollection(
        name: "login", label: "Login", password: SecureBytes(Array("floor".utf8)), parameters: .testing)
    var clock = timespec()
    clock_gettime(CLOCK_MONOTONIC, &clock)
    let start = Double(clock.tv_sec) + Double(clock.tv_nsec) / 1e9
    var next = 0
    while next < count {
        let end = min(count, next + batch)
        try store.transaction { () throws(StoreError) in
            for index in next..<end {
                let digits = String(index)
                let number = String(repeating: "0", count: max(0, 6 - digits.count)) + digits
                let contents = ItemContents(
                    label: "site \(number)",
                    attributes: [
                        "xdg:schema": "org.gnome.keyring.NetworkPassword", "server": "host\(number).example.com",
                        "user": "user\(number)", "protocol": "https",
                    ],
                    secret: SecureBytes(Array("pw-\(number)-abcdefghij".utf8)), contentType: "text/plain")
                _ = try store.createItem(in: collection, keys: keys, contents: contents)
            }
        }
        next = end
    }
    clock_gettime(CLOCK_MONOTONIC, &clock)
    let seconds = Double(clock.tv_sec) + Double(clock.tv_nsec) / 1e9 - start
    store.close()
    print("{\"items\": \(count), \"batch\": \(batch), \"seconds\": \(Double(Int(seconds * 1000)) / 1000)}")
} catch {
    fail("\(error)", status: 1)
}
