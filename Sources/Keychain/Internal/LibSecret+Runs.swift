// secretd's Runs1 interface (scoped runs), called over GDBus on libsecret's connection, which
// stays open for the life of the process: a run ends when its secretctl leaves the bus.

internal import CLibSecret
import DBusValues
import KeychainCore

extension LibSecret {
    /// Begins the run `name` for the PID namespace of process `pid` (started by this process).
    static func beginRun(name: String, allow: [(service: String, account: String?)], group: String?, pid: Int32) throws(KeychainError) {
        try withService { service throws(KeychainError) in
            let pairs = allow.map { DBusValue.tuple([.string($0.service), .string($0.account ?? "")]) }
            _ = try callSecretd(
                service, SecretServiceNames.Interface.runs, "Begin",
                [.string(name), .array(element: "(ss)", pairs), .string(group ?? ""), .uint32(UInt32(bitPattern: pid))],
                feature: "scoped runs")
        }
    }

    /// Ends the run `name`.
    static func endRun(name: String) throws(KeychainError) {
        try withService { service throws(KeychainError) in
            _ = try callSecretd(service, SecretServiceNames.Interface.runs, "End", [.string(name)], feature: "scoped runs")
        }
    }
}
