// The only file that calls libassuan: asking a person for a password through pinentry.
// Blocking; the daemon calls it on a thread of its own, never on the main loop.

internal import CAssuan
import Foundation
import SecretStore

/// What to show in the pinentry dialog.
struct PinentryRequest: Sendable {
    /// The window title.
    var title: String
    /// The explanation above the field.
    var description: String
    /// The label of the field.
    var prompt: String
    /// An error from the previous attempt ("Wrong password"), if any.
    var error: String?
    /// Ask twice and require both to match (for a new password).
    var confirm: Bool = false
}

/// How a pinentry conversation ended.
enum PinentryOutcome {
    /// The person entered a password.
    case password(SecureBytes)
    /// The person cancelled, or closed the dialog.
    case cancelled
    /// pinentry could not be started or failed (for example: no terminal, no display).
    case failed(String)
}

/// Talks the Assuan protocol to a pinentry program.
enum Pinentry {
    /// Starts `program`, shows `request`, and returns what the person did.
    static func ask(program: String, _ request: PinentryRequest) -> PinentryOutcome {
        var context: assuan_context_t?
        guard assuan_new(&context) == 0, let context else { return .failed("cannot create an Assuan context") }
        defer { assuan_release(context) }
        assuan_set_flag(context, assuan_flag_t(ASSUAN_CONFIDENTIAL), 1)  // no logging of the exchange

        var noDescriptors = [keychain_assuan_invalid_fd()]
        let name = strdup(program)
        defer { free(name) }
        var argv: [UnsafePointer<CChar>?] = [UnsafePointer(name), nil]
        let connected = assuan_pipe_connect(context, program, &argv, &noDescriptors, nil, nil, 0)
        guard connected == 0 else { return .failed("cannot start \(program): \(describe(connected))") }

        var commands = [
            "SETTITLE " + escape(request.title), "SETDESC " + escape(request.description),
            "SETPROMPT " + escape(request.prompt), "SETOK OK", "SETCANCEL Cancel",
        ]
        if let error = request.error { commands.append("SETERROR " + escape(error)) }
        if request.confirm { commands.append("SETREPEAT Confirm:") }
        // Display settings are best effort: old pinentries lack some (SETREPEAT, SETERROR).
        for command in commands { _ = assuan_transact(context, command, nil, nil, nil, nil, nil, nil) }

        let collector = Collector()
        defer { collector.wipe() }
        let status = assuan_transact(
            context, "GETPIN",
            { opaque, buffer, length in
                Unmanaged<Collector>.fromOpaque(opaque!).takeUnretainedValue().append(buffer, length)
                return 0
            }, Unmanaged.passUnretained(collector).toOpaque(), nil, nil, nil, nil)
        _ = assuan_transact(context, "BYE", nil, nil, nil, nil, nil, nil)
        if status != 0 {
            let code = gpg_err_code(status)
            if code == GPG_ERR_CANCELED || code == GPG_ERR_ASS_CANCELED || code == GPG_ERR_NOT_CONFIRMED {
                return .cancelled
            }
            return .failed("pinentry failed: \(describe(status))")
        }
        return .password(collector.bytes.withUnsafeBytes { SecureBytes(copying: $0) })
    }

    /// Percent-escapes what Assuan lines cannot carry (%, CR, LF).
    static func escape(_ text: String) -> String {
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
