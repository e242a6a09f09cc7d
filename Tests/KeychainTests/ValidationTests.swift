import Foundation
import Testing

@testable import Keychain

/// Input checks happen before anything is sent, so these need no provider.
@Suite struct Validation {
    @Test("empty service or account is rejected", arguments: [("", "a", "service"), ("s", "", "account")])
    func empty(service: String, account: String, field: String) {
        #expect(throws: KeychainError.invalidInput(.empty(field: field))) {
            try Keychain.setPassword("x", service: service, account: account)
        }
        #expect(throws: KeychainError.invalidInput(.empty(field: field))) {
            try Keychain.password(service: service, account: account)
        }
    }

    @Test("a value over the limit is rejected before it is sent")
    func tooLarge() throws {
        let keychain = try Keychain(service: "test.validation")
        let limit = Keychain.maximumValueSize
        #expect(throws: KeychainError.invalidInput(.tooLarge(field: "value", limit: limit))) {
            try keychain.set(Data(count: limit + 1), for: "alice")
        }
        #expect(throws: KeychainError.invalidInput(.tooLarge(field: "value", limit: limit))) {
            try keychain.set(String(repeating: "a", count: limit + 1), for: "alice")
        }
        #expect(throws: KeychainError.invalidInput(.tooLarge(field: "account", limit: 64 * 1024))) {
            try keychain.set("x", for: String(repeating: "a", count: 64 * 1024 + 1))
        }
    }

    @Test("NUL characters in text fields are rejected")
    func nul() throws {
        #expect(throws: KeychainError.invalidInput(.containsNUL(field: "service"))) {
            try Keychain(service: "a\u{0}b")
        }
        let keychain = try Keychain(service: "test.validation")
        #expect(throws: KeychainError.invalidInput(.containsNUL(field: "account"))) {
            try keychain.string(for: "a\u{0}")
        }
        #expect(throws: KeychainError.invalidInput(.containsNUL(field: "label"))) {
            try keychain.set("x", for: "a", label: "l\u{0}")
        }
    }

    @Test("internet handles check server and port")
    func internet() {
        #expect(throws: KeychainError.invalidInput(.empty(field: "server"))) { try InternetKeychain(server: "") }
        #expect(throws: KeychainError.invalidInput(.tooLarge(field: "port", limit: 65535))) {
            try InternetKeychain(server: "h", port: 70000)
        }
        #expect(throws: KeychainError.invalidInput(.empty(field: "access group"))) {
            try Keychain(service: "s", accessGroup: "")
        }
    }

    @Test("protocol names are stored lower-case")
    func protocolCase() {
        #expect(InternetProtocol(rawValue: "HTTPS") == .https)
    }

    @Test("error descriptions are one line and name the problem")
    func descriptions() {
        let cases: [(KeychainError, String)] = [
            (.locked, "the keyring is locked"),
            (.cancelled, "the prompt was dismissed"),
            (.noProvider(reason: "no bus"), "no Secret Service provider: no bus"),
            (.invalidInput(.empty(field: "service")), "invalid input: service must not be empty"),
            (.accessDenied(message: "not in group"), "access denied: not in group"),
            (.noSuchKeyring(alias: "work"), "no keyring has the alias 'work'"),
            (.notSupported(feature: "access groups"), "the provider does not support access groups"),
            (.protocolError(reason: "no reply to GetAll"), "the provider broke the Secret Service protocol: no reply to GetAll"),
            (.backend(domain: "g-io-error-quark", code: 24, message: "Timeout"), "g-io-error-quark error 24: Timeout"),
        ]
        for (error, text) in cases {
            #expect(error.description == text)
            #expect(!error.description.contains("\n"))
        }
    }
}
