import FoundationEssentials
import Glibc
import KeychainCore

/// The clock the waits after wrong passwords, and `lock-after-idle`, are measured on.
///
/// Release builds read the system clock and nothing else. Debug builds, which the tests run,
/// add the number of seconds written in the file named by ``TestHooks/passwordClockOffsetFile``
/// when it is set: a test then steps over a wait instead of sleeping through it, so it can fail
/// only when the wait is wrong, never because the machine was slow.
enum PasswordClock {
    /// Now, on this clock.
    static func now() -> Date {
        #if DEBUG
        return Date().addingTimeInterval(testOffset())
        #else
        return Date()
        #endif
    }

    #if DEBUG
    /// The seconds in the offset file; 0 when it is unset, missing or not a number.
    private static func testOffset() -> TimeInterval {
        guard let path = getenv(TestHooks.passwordClockOffsetFile).map({ String(cString: $0) }),
            let file = fopen(path, "r")
        else { return 0 }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return 0 }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return Double(text.filter { !$0.isWhitespace }) ?? 0
    }
    #endif
}
