import CSystemd
import DBusValues
import Foundation
import KeychainTestSupport
@testable import SecretService
import Testing

/// DBusValue through real sd-bus messages (built on a connection to a private bus), and the
/// sizes the call quota counts them at.
@Suite struct SDBusValuesTests {
    /// A method call on a connection to a fresh private bus, with `values` appended, sealed as
    /// a sent message is, so it reads from the start.
    static func sealedCall(_ values: [DBusValue]) throws -> (bus: OpaquePointer, message: OpaquePointer) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sdbus-values-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let privateBus = try PrivateBus(directory: directory)
        var bus: OpaquePointer?
        #expect(sd_bus_new(&bus) >= 0)
        let connection = try #require(bus)
        #expect(sd_bus_set_address(connection, privateBus.address) >= 0)
        #expect(sd_bus_set_bus_client(connection, 1) >= 0)
        #expect(sd_bus_start(connection) >= 0)
        var message: OpaquePointer?
        #expect(sd_bus_message_new_method_call(
            connection, &message, "org.example.Nobody", "/org/example", "org.example.Iface", "Method") >= 0)
        let call = try #require(message)
        #expect(SDBusValues.append(values, to: call))
        #expect(sd_bus_message_seal(call, 1, 0) >= 0)
        return (connection, call)
    }

    @Test("the quota's size of a call: strings and byte arrays by length, other values 8 bytes; the message reads whole after")
    func payloadSize() throws {
        let secret = DBusValue.tuple([
            .objectPath("/org/freedesktop/secrets/session/1"), .bytes(DBusBytes([])),
            .bytes(DBusBytes(Array(repeating: 7, count: 100_000))), .string("text/plain"),
        ])
        let properties = DBusValue.properties([
            "org.freedesktop.Secret.Item.Label": .string("Mail"),
            "org.freedesktop.Secret.Item.Attributes": .stringMap(["service": "mail"]),
        ])
        let values: [DBusValue] = [properties, secret, .boolean(true)]
        let (bus, message) = try Self.sealedCall(values)
        defer {
            sd_bus_message_unref(message)
            sd_bus_flush_close_unref(bus)
        }
        let texts = "org.freedesktop.Secret.Item.Label".utf8.count + "Mail".utf8.count
            + "org.freedesktop.Secret.Item.Attributes".utf8.count + "service".utf8.count + "mail".utf8.count
            + "/org/freedesktop/secrets/session/1".utf8.count + "text/plain".utf8.count
        #expect(SDBusValues.payloadSize(message) == texts + 100_000 + 8)
        #expect(SDBusValues.readAll(message) == values)  // rewound: the call is read as received
        #expect(SDBusValues.payloadSize(message) == texts + 100_000 + 8)
    }

    @Test("measured up to a limit, a call of many small values stops once it is reached, and reads whole after")
    func payloadSizeUpToLimit() throws {
        let items = (0..<1000).map { n in DBusValue.tuple([.string("label \(n)"), .bytes(DBusBytes(Array(repeating: 1, count: 100)))]) }
        let values: [DBusValue] = [.string(""), .array(element: "(say)", items)]
        let (bus, message) = try Self.sealedCall(values)
        defer {
            sd_bus_message_unref(message)
            sd_bus_unref(bus)
        }
        let whole = SDBusValues.payloadSize(message)
        #expect(whole == items.indices.reduce(0) { $0 + "label \($1)".utf8.count + 100 })
        let bounded = SDBusValues.payloadSize(message, upTo: 32 * 1024)
        #expect(bounded >= 32 * 1024 && bounded < 32 * 1024 + 200, "\(bounded)")
        #expect(SDBusValues.payloadSize(message, upTo: whole + 1) == whole)
        #expect(SDBusValues.readAll(message) == values)
    }
}
