// A small program that uses the Keychain library the way a Swift tool would: it stores a
// password, reads it back, lists the service's accounts and (with --clean) deletes them.
// The secret comes from standard input when it is not a terminal, never from the command line.

import Foundation
import Keychain

let service = "org.example.keychain-demo"
let arguments = CommandLine.arguments.dropFirst()

if arguments.contains("--help") || arguments.contains("-h") {
    print("""
        usage: keychain-demo [--clean]
          Stores a password for service '\(service)', account 'demo', in the Secret Service
          provider on the session bus, reads it back and lists the service's accounts.
          The password is read from standard input when it is not a terminal; otherwise a
          random one is made. --clean deletes the demo items instead.
        """)
    exit(0)
}

/// Prints a one-line error and exits non-zero.
func fail(_ error: KeychainError) -> Never {
    FileHandle.standardError.write(Data("keychain-demo: \(error)\n".utf8))
    exit(1)
}

do {
    let keychain = try Keychain(service: service)
    if arguments.contains("--clean") {
        print("deleted \(try keychain.removeAll()) item(s) of \(service)")
        exit(0)
    }
    var password: String
    if isatty(STDIN_FILENO) == 0, let input = String(data: FileHandle.standardInput.readDataToEndOfFile(), encoding: .utf8),
        !input.isEmpty
    {
        password = input.trimmingCharacters(in: .newlines)
    } else {
        password = (0..<4).map { _ in String(UInt32.random(in: 0...UInt32.max), radix: 36) }.joined(separator: "-")
    }
    try keychain.set(password, for: "demo", label: "Keychain demo", comment: "written by keychain-demo")
    let readBack = try keychain.string(for: "demo")
    print("stored and read back the password for account 'demo': \(readBack == password ? "match" : "MISMATCH")")
    for item in try keychain.allAccounts() {
        print("  \(item.service)  \(item.account)  \"\(item.label)\"  modified \(item.modified)")
    }
    print("look it up with: secret-tool lookup service \(service) account demo")
    password = ""
} catch {
    fail(error)
}
