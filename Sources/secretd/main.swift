// secretd: a Secret Service provider (org.freedesktop.secrets) over an encrypted SQLite store.
// This file only parses the command line and wires the parts together.

import CProcess
import FoundationEssentials
import Glibc
import KeychainCore
import SecretService
import SecretCrypto
import SecretStore

// GLib 2.74 keeps freed blocks in its slice allocator, where malloc_trim cannot return them:
// one search of 10,000 items kept 12 MB after it was over. GLib reads G_SLICE while the process
// loads, before this line, so secretd starts itself once more (same pid, arguments and open
// files, so a password on standard input is still unread) with plain malloc. If that cannot
// be done, it goes on as it is.
// It starts its own file by its real path, so that ps, top and systemd show "secretd", not "exe".
if getenv("G_SLICE") == nil {
    setenv("G_SLICE", "always-malloc", 1)
    // libtss2 prints its own ERROR lines for failures secretd reports itself (a changed PCR,
    // another machine's slot); its log stays off unless asked for.
    setenv("TSS2_LOG", "all+NONE", 0)
    execv(OwnExecutable.path ?? "/proc/self/exe", CommandLine.unsafeArgv)
}

let usage = """
    usage: secretd [--foreground] [--data-dir DIR] [--config-dir DIR] [--unlock] [--replace] [--bus-name NAME]
           secretd --version | --help

    A Secret Service provider: owns org.freedesktop.secrets on the session bus and keeps items
    encrypted in $XDG_DATA_HOME/secretd/secretd.sqlite3.

    options:
      --foreground       stay in the foreground (secretd never daemonizes; accepted for scripts)
      --data-dir DIR     where the database lives (default $XDG_DATA_HOME/secretd)
      --config-dir DIR   where secretd.conf and access-groups.conf live (default $XDG_CONFIG_HOME/secretd)
      --unlock           read the login password from standard input (to end of input, one
                         trailing newline removed) and unlock the login keyring, creating it
                         if there is none
      --replace          take org.freedesktop.secrets from the provider that owns it, and
                         the data directory from the secretd that uses it (it is stopped)
      --bus-name NAME    own NAME instead of org.freedesktop.secrets and take no login password
                         from PAM (secretctl import secret-service runs it so, beside the
                         provider it imports from)
      --version          print the version
      -h, --help         print this help

    Without --unlock, a systemd credential named login-password ($CREDENTIALS_DIRECTORY)
    unlocks the login keyring the same way.
    """

/// Writes `text` to standard error as it is.
func printError(_ text: String) {
    var text = text
    text.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

/// Prints one line to standard error and exits with `code`.
func fail(_ message: String, code: Int32 = 1) -> Never {
    printError("secretd: \(message)\n")
    exit(code)
}

// MARK: - Command line

var dataDirectory: URL?
var configDirectory: URL?
var unlock = false
var replace = false
var busName = SecretServiceNames.busName
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--foreground": break
    case "--unlock": unlock = true
    case "--replace": replace = true
    case "--version":
        print("secretd \(KeychainVersion.current)")
        exit(0)
    case "-h", "--help":
        print(usage)
        exit(0)
    case "--bus-name":
        guard let value = arguments.popFirst(), SecretServiceNames.isWellKnownBusName(value) else {
            fail("--bus-name needs a well-known bus name (such as org.example.Keyring)", code: 2)
        }
        busName = value
    case "--data-dir", "--config-dir":
        guard let value = arguments.popFirst(), !value.isEmpty else { fail("\(argument) needs a directory", code: 2) }
        if argument == "--data-dir" {
            dataDirectory = URL(fileURLWithPath: value)
        } else {
            configDirectory = URL(fileURLWithPath: value)
        }
    default:
        fail("unknown option '\(argument)' (see secretd --help)", code: 2)
    }
}

let environment = ProcessInfo.processInfo.environment
let home = environment["HOME"] ?? getpwuid(getuid()).map { String(cString: $0.pointee.pw_dir) } ?? "/"
let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "\(home)/.local/share"
let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "\(home)/.config"
let configurationDirectory = configDirectory ?? URL(fileURLWithPath: configHome).appendingPathComponent("secretd")
let configuration: Configuration
do {
    configuration = try Configuration.load(from: configurationDirectory)
} catch {
    fail("bad configuration: \(error)")
}
let options = Daemon.Options(
    dataDirectory: dataDirectory ?? URL(fileURLWithPath: dataHome).appendingPathComponent("secretd"), replace: replace, busName: busName,
    configuration: configuration, configDirectory: configurationDirectory,
    runtimeDirectory: environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 })

// MARK: - Hardening and secrets

_ = keychain_set_non_dumpable()
if let problem = OpenFileLimit.raiseToHard() { printError("<4>secretd: \(problem)\n") }
Gcrypt.initialize()
SecureBytes.lockRefused = { bytes in
    printError("<4>secretd: cannot lock \(bytes) bytes of secrets in memory (its RLIMIT_MEMLOCK, ulimit -l, is used up); they may be written to swap\n")
}

/// Reads the login password from standard input: one line typed without echo on a terminal,
/// otherwise all of it (less one trailing newline).
func readPassword() -> SecureBytes? {
    let limit = KeychainLimits.passwordSize
    let terminal = isatty(STDIN_FILENO) != 0
    var line = HiddenLine(
        from: STDIN_FILENO, limit: limit, stopAtNewline: terminal,
        prompt: { if terminal { printError("Login password: ") } }, newline: { printError("\n") })
    if line.isTruncated { fail("the password on standard input is longer than \(limit) bytes") }
    line.dropTrailingNewline()
    return line.withBytes { SecureBytes(copying: $0) }
}

/// The login password from a systemd credential, if one was passed.
func credentialPassword() -> SecureBytes? {
    guard let directory = environment["CREDENTIALS_DIRECTORY"] else { return nil }
    guard var bytes = FileManager.default.contents(atPath: "\(directory)/login-password") else { return nil }
    defer { bytes.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) } }
    if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
    return bytes.withUnsafeBytes { SecureBytes(copying: $0) }
}

// MARK: - Start

let daemon: Daemon
do {
    daemon = try Daemon(options: options)
} catch {
    if case .inUse = error {
        fail("\(error): \(options.dataDirectory.path); stop it, use --replace to take over from it, or give this one a --data-dir of its own")
    }
    // A damaged or newer database is left as it is; every client is told so, and what to do.
    if let refusal = DatabaseRefusal(error, path: options.dataDirectory.appendingPathComponent(Store.fileName).path) {
        printError("<3>secretd: \(refusal)\n")
        do { try RefusingService.run(refusal, busName: busName, replace: replace) { fail($0) } } catch { fail(error.message) }
        exit(0)
    }
    fail("cannot open the keyring database in \(options.dataDirectory.path): \(error)")
}

if let password = unlock ? readPassword() : credentialPassword() {
    do {
        try daemon.unlockLogin(password: password)
    } catch {
        fail("cannot unlock the login keyring: \(error)")
    }
}

daemon.unlockLoginWithTPM()

do {
    try daemon.start(
        ready: { printError("<6>secretd: serving \(busName)\n") },
        refused: { message in fail(message) })
} catch {
    fail(error.message)
}
Daemon.run()
daemon.close()
