// A thread of its own for work that blocks (a person at pinentry, a child process, a libsecret
// call), without Foundation's Thread: secretd, secretctl and the Keychain library link
// FoundationEssentials only.

internal import CProcess
import Glibc

/// Starts detached POSIX threads.
public enum DetachedThread {
    /// Starts `body` on a new detached thread named `name` (at most 15 bytes show in ps); false
    /// if the system has no thread to give.
    public static func start(named name: String, _ body: @escaping () -> Void) -> Bool {
        let context = Unmanaged.passRetained(Body(name: name, body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { context in
            let body = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
            _ = keychain_name_this_thread(body.name)
            body.run()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            return false
        }
        pthread_detach(thread)
        return true
    }

    /// Blocks the calling thread for `seconds`.
    public static func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        var left = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1_000_000_000))
        var request = left
        while nanosleep(&request, &left) == -1 && errno == EINTR { request = left }
    }

    private final class Body {
        let name: String
        let run: () -> Void
        init(name: String, _ run: @escaping () -> Void) {
            self.name = name
            self.run = run
        }
    }
}
