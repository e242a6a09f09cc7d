import Dispatch
import Foundation
import Glibc
import Testing

@testable import Keychain

/// The next bulk call runs on a thread of its own while the caller handles the one before
/// (`Prefetch`, issue 51 point 6): its value and its error reach the caller, and it keeps the
/// caller's cancellation, so cancelling an async operation also cancels the call under way.
@Suite struct PrefetchTests {
    @Test("the work runs on another thread; value() gives its value, and its error")
    func valueAndError() throws {
        let caller = pthread_self()
        let work = Prefetch(named: "test-prefetch") { () throws(KeychainError) -> Bool in pthread_equal(pthread_self(), caller) == 0 }
        #expect(try work.value())
        let failing = Prefetch(named: "test-prefetch") { () throws(KeychainError) -> Int in throw .locked }
        #expect(throws: KeychainError.locked) { try failing.value() }
    }

    @Test("the work has the starting thread's cancellation, and none when the caller has none")
    func cancellationCarried() throws {
        #expect(try Prefetch(named: "test-prefetch") { () throws(KeychainError) in LibSecret.Cancellation.current == nil }.value())
        let cancellation = LibSecret.Cancellation()
        let done = DispatchSemaphore(value: 0)
        // The cancellables as untyped pointers (GLib's types stay inside the library).
        nonisolated(unsafe) var seen: (outer: UnsafeMutableRawPointer?, inner: UnsafeMutableRawPointer?)
        cancellation.run(on: "test-operation") {
            let outer = LibSecret.Cancellation.current.map(UnsafeMutableRawPointer.init)
            let inner = try? Prefetch(named: "test-prefetch") { () throws(KeychainError) in
                LibSecret.Cancellation.current.map(UnsafeMutableRawPointer.init)
            }.value()
            seen = (outer, inner ?? nil)
            done.signal()
        }
        done.wait()
        #expect(seen.outer == UnsafeMutableRawPointer(cancellation.pointer))
        #expect(seen.inner == UnsafeMutableRawPointer(cancellation.pointer))
    }
}
