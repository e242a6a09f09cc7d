// The only file that calls libassuan: asking a person for a password, or a choice, through
// pinentry. Blocking; callers run it on a thread of their own, never on a main loop.

internal import CAssuan
import Glibc

/// What to show in the pinentry dialog.
public struct PinentryRequest: Sendable {
    /// The window title.
    public var title: String
    /// The explanation above the field.
    public var description: String
    /// The label of the field.
    public var prompt: String
    /// An error from the previous attempt ("Wrong password"), if any.
    public var error: String?
    /// Ask twice and require both to match (for a new password).
    public var confirm: Bool

    /// A dialog with these texts.
    public init(title: String, description: String, prompt: String, error: String? = nil, confirm: Bool = false) {
        self.title = title
        self.description = description
        self.prompt = prompt
        self.error = error
        self.confirm = confirm
    }
}

/// How a password dialog ended.
public enum PinentryOutcome<Secret> {
    /// The person entered a password; this is what the caller's `receive` made of it.
    case password(Secret)
    /// The person cancelled, or closed the dialog.
    case cancelled
    /// pinentry could not be started or failed (for example: no terminal, no display).
    case failed(String)
}

/// Which button of a three-button dialog the person pressed.
public enum PinentryChoice: Equatable, Sendable {
    /// The OK button.
    case ok
    /// The middle ("not OK") button.
    case notOK
    /// Cancel, or the dialog was closed.
    case cancelled
    /// pinentry could not be started or failed.
    case failed(String)
}

/// Talks the Assuan protocol to a pinentry program.
public enum Pinentry {
    /// Starts `program`, shows `request`, and returns what the person did. The password is
    /// handed to `receive` in a buffer that is wiped as soon as it returns. A `cancellation`
    /// that is cancelled meanwhile ends the dialog, and the outcome is `.cancelled`.
    public static func ask<Secret>(
        program: String, _ request: PinentryRequest, cancellation: PinentryCancellation? = nil,
        receive: (UnsafeRawBufferPointer) -> Secret
    ) -> PinentryOutcome<Secret> {
        var commands = [
            "SETTITLE " + escape(request.title), "SETDESC " + escape(request.description),
            "SETPROMPT " + escape(request.prompt), "SETOK OK", "SETCANCEL Cancel",
        ]
        if let error = request.error { commands.append("SETERROR " + escape(error)) }
        if request.confirm { commands.append("SETREPEAT Confirm:") }
        return converse(program: program, settings: commands, cancellation: cancellation) { context in
            let collector = Collector()
            defer { collector.wipe() }
            let status = assuan_transact(
                context, "GETPIN",
                { opaque, buffer, length in
                    Unmanaged<Collector>.fromOpaque(opaque!).takeUnretainedValue().append(buffer, length)
                    return 0
                }, Unmanaged.passUnretained(collector).toOpaque(), nil, nil, nil, nil)
            if status != 0 {
                if isCancellation(status) || cancellation?.isCancelled == true { return .cancelled }
                return .failed("pinentry failed: \(describe(status))")
            }
            return .password(collector.bytes.withUnsafeBytes { receive($0) })
        } failed: { .failed($0) } cancelled: { .cancelled }
    }

    /// Shows a message with three buttons (`ok`, `notOK`, `cancel` are their labels) and
    /// returns the one pressed; `.cancelled` when `cancellation` ends the dialog.
    public static func choose(
        program: String, title: String, description: String, ok: String, notOK: String, cancel: String,
        cancellation: PinentryCancellation? = nil
    ) -> PinentryChoice {
        let commands = [
            "SETTITLE " + escape(title), "SETDESC " + escape(description),
            "SETOK " + escape(ok), "SETNOTOK " + escape(notOK), "SETCANCEL " + escape(cancel),
        ]
        return converse(program: program, settings: commands, cancellation: cancellation) { context in
            let status = assuan_transact(context, "CONFIRM", nil, nil, nil, nil, nil, nil)
            if status == 0 { return .ok }
            if cancellation?.isCancelled == true { return .cancelled }
            switch gpg_err_code(status) {
            case GPG_ERR_NOT_CONFIRMED: return .notOK
            case GPG_ERR_CANCELED, GPG_ERR_ASS_CANCELED: return .cancelled
            default: return .failed("pinentry failed: \(describe(status))")
            }
        } failed: { .failed($0) } cancelled: { .cancelled }
    }

    /// Starts `program`, sends the display `settings`, runs `body`, and says goodbye; the
    /// process is reaped before this returns. A cancelled `cancellation` returns `cancelled()`
    /// without starting it.
    private static func converse<Result>(
        program: String, settings: [String], cancellation: PinentryCancellation?,
        _ body: (assuan_context_t) -> Result, failed: (String) -> Result, cancelled: () -> Result
    ) -> Result {
        let cancellation = cancellation ?? PinentryCancellation()
        if cancellation.isCancelled { return cancelled() }
        var context: assuan_context_t?
        guard assuan_new(&context) == 0, let context else { return failed("cannot create an Assuan context") }
        var pid: pid_t?
        defer {
            assuan_release(context)  // closes the pipes; with ASSUAN_NO_WAITPID it does not wait
            if let pid { cancellation.reap(pid) }
        }
        assuan_set_flag(context, assuan_flag_t(ASSUAN_CONFIDENTIAL), 1)  // no logging of the exchange
        assuan_set_flag(context, assuan_flag_t(ASSUAN_NO_WAITPID), 1)  // reaped by the cancellation

        var noDescriptors = [keychain_assuan_invalid_fd()]
        let name = strdup(program)
        defer { free(name) }
        var argv: [UnsafePointer<CChar>?] = [UnsafePointer(name), nil]
        let connected = assuan_pipe_connect(context, program, &argv, &noDescriptors, nil, nil, 0)
        guard connected == 0 else { return failed("cannot start \(program): \(describe(connected))") }
        let child = assuan_get_pid(context)
        if child > 0 {
            pid = child
            guard cancellation.started(child) else { return cancelled() }
        }
        // Display settings are best effort: old pinentries lack some (SETREPEAT, SETERROR, SETNOTOK).
        for command in settings { _ = assuan_transact(context, command, nil, nil, nil, nil, nil, nil) }
        let result = body(context)
        _ = assuan_transact(context, "BYE", nil, nil, nil, nil, nil, nil)
        return result
    }

    private static func isCancellation(_ status: gpg_error_t) -> Bool {
        let code = gpg_err_code(status)
        return code == GPG_ERR_CANCELED || code == GPG_ERR_ASS_CANCELED || code == GPG_ERR_NOT_CONFIRMED
    }

    /// Percent-escapes what Assuan lines cannot carry (%, CR, LF).
    public static func escape(_ text: String) -> String {
        var result = ""
        for character in text.unicodeScalars {
            switch character {
            case "%": result += "%25"
            case "\r": result += "%0D"
            case "\n": result += "%0A"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }

    private static func describe(_ error: gpg_error_t) -> String {
        String(cString: gpg_strerror(error))
    }

    /// Accumulates the D lines of GETPIN (already unescaped by libassuan).
    private final class Collector {
        var bytes: [UInt8] = []

        func append(_ buffer: UnsafeRawPointer?, _ length: Int) {
            guard let buffer, length > 0 else { return }
            bytes.reserveCapacity(bytes.count + length)
            bytes.append(contentsOf: UnsafeRawBufferPointer(start: buffer, count: length))
        }

        func wipe() {
            bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
            bytes.removeAll()
        }
    }
}
