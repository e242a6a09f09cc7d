import Testing

@testable import SecretService

/// The object paths secretd parses on every call.
@Suite struct ObjectPathsTests {
    @Test("every kind of path, and what is not one of ours", arguments: [
        ("/org/freedesktop/secrets", ObjectPaths.Target.service),
        ("/org/freedesktop/secrets/collection/login", .collection(name: "login")),
        ("/org/freedesktop/secrets/collection/login/42", .item(collection: "login", id: 42)),
        ("/org/freedesktop/secrets/aliases/default", .alias("default")),
        ("/org/freedesktop/secrets/session/s7", .session(7)),
        ("/org/freedesktop/secrets/prompt/p12", .prompt(12)),
        ("/", .unknown),
        ("/org/freedesktop/secretsx", .unknown),
        ("/org/freedesktop/secrets/collection", .unknown),
        ("/org/freedesktop/secrets/collection/login/4x2", .unknown),
        ("/org/freedesktop/secrets/collection/login/-1", .unknown),
        ("/org/freedesktop/secrets/collection/login/1234567890123456789", .unknown),
        ("/org/freedesktop/secrets/collection/login/1/2", .unknown),
        ("/org/freedesktop/secrets/session/7", .unknown),
        ("/org/freedesktop/secrets/session/s", .unknown),
        ("/org/freedesktop/secrets/prompt/s1", .unknown),
        ("/org/freedesktop/secrets/items/login", .unknown),
        ("/com/example/org/freedesktop/secrets", .unknown),
    ])
    func parse(_ path: String, _ target: ObjectPaths.Target) {
        #expect(ObjectPaths.parse(path) == target, "\(path)")
    }

    @Test("the paths secretd makes parse back")
    func roundTrip() {
        #expect(ObjectPaths.parse(ObjectPaths.item("work", 9_000_000_001)) == .item(collection: "work", id: 9_000_000_001))
        #expect(ObjectPaths.parse(ObjectPaths.session(3)) == .session(3))
        #expect(ObjectPaths.parse(ObjectPaths.prompt(4)) == .prompt(4))
        #expect(ObjectPaths.parse(ObjectPaths.collection("a_b")) == .collection(name: "a_b"))
    }
}
