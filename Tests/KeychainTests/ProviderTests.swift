import Foundation
import KeychainTestSupport
import Testing

@testable import Keychain

/// Every test that talks to the real provider on the private bus. They run one at a time,
/// because some of them stop the provider or lock its collection.
@Suite(.serialized) struct ProviderTests {}

/// The process-wide private bus and provider (see `TestEnvironment`).
func environment() throws -> TestEnvironment {
    try TestEnvironment.shared()
}

/// A service name no other test uses.
func uniqueService(_ name: String = #function) -> String {
    "test.\(name.prefix { $0 != "(" }).\(UUID().uuidString.prefix(8))"
}

/// Runs `operation`, failing instead of hanging when it takes longer than `seconds`.
func withinDeadline<T: Sendable>(
    _ seconds: Double, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw HarnessError("the call did not return within \(seconds) s")
        }
        return value
    }
}

/// The `KeychainError` that `body` throws (nil when it succeeds); fails instead of hanging when
/// it takes longer than `seconds`.
func keychainError(
    within seconds: Double = 20, _ body: @escaping @Sendable () async throws -> Void
) async throws -> KeychainError? {
    try await withinDeadline(seconds) { () -> KeychainError? in
        do {
            try await body()
            return nil
        } catch {
            return error as? KeychainError
        }
    }
}

/// The items `secret-tool search --all` reports for the given attributes, as attribute maps.
func secretToolSearch(_ attributes: [String: String]) throws -> [[String: String]] {
    let arguments = ["secret-tool", "search", "--all"] + attributes.flatMap { [$0.key, $0.value] }
    let result = try environment().run(arguments)
    var items: [[String: String]] = []
    // secret-tool prints each item as a "[path]" line then "key = value" lines (some on stderr).
    for line in (result.text + "\n" + result.errorOutput).split(separator: "\n") {
        if line.hasPrefix("[") { items.append([:]); continue }
        guard let range = line.range(of: " = "), !items.isEmpty else { continue }
        items[items.count - 1][String(line[..<range.lowerBound])] = String(line[range.upperBound...])
    }
    return items
}
