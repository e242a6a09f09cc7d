internal import CProcess
import Glibc

/// The thread a prompt's conversation with pinentry runs on, off the main loop: a detached
/// POSIX thread, since a conversation may block for minutes on a person.
enum PromptThread {
    /// Starts `body` on a new detached thread named `name` (at most 15 bytes show); false if
    /// the system has no thread to give.
    static func start(named name: String, _ body: @escaping () -> Void) -> Bool {
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

    /// Blocks the calling thread (never the main loop's) for `seconds`.
    static func sleep(seconds: Double) {
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
