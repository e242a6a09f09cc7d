// `secretctl run [--allow SERVICE[:ACCOUNT]]... [--group G] [--name NAME] -- COMMAND [ARGS...]`:
// COMMAND, and everything it starts, sees only the items the run allows (secretd(1), SCOPED
// RUNS).
//
// COMMAND runs under bwrap in a PID namespace of its own (the rest of the system as it is:
// the same files, devices, network and session bus). secretd is told the namespace before
// COMMAND starts (bwrap waits on --block-fd until then), and matches every new client against
// it and the namespaces nested in it. When COMMAND exits the namespace ends, and with it every
// process left in it; then the run ends.

import FoundationEssentials
import KeychainCore
import Glibc
import Keychain
import ProcessSpawning

enum RunCommand: Verb {
    /// `COMMAND [ARGS...]`, every word after `--`, taken as it is.
    static let command = Positional<[String]>(
        "COMMAND [ARGS...]", help: "The command to run in the scope, and its arguments.", afterSeparator: true)
    /// `--allow SERVICE[:ACCOUNT]`: an item the run may read, change and create.
    static let allow = LongOption<[String]>(
        "allow", value: "SERVICE[:ACCOUNT]",
        help: "Let the run use the items of SERVICE (their service or server attribute), or only ACCOUNT's (account, username or user); "
            + "split at the last colon. Repeatable.")
    /// `--group G`: an access group the run may use whole.
    static let group = LongOption<String?>(
        "group", value: "GROUP", help: "Let the run use every item of this access group, and create its new items there.")
    /// `--name NAME`: how the audit trail names the run.
    static let name = LongOption<String?>(
        "name", value: "NAME", help: "The run's name in the audit trail (run:NAME); default COMMAND's name and secretctl's pid.")

    static let spec = CommandSpec(
        name: "run",
        abstract: "Run COMMAND so that it and everything it starts see only the secrets you allow (secretd).",
        arguments: [command], options: [allow, group, name],
        examples: [
            "secretctl run --allow api.example.com:ci -- ./deploy.sh",
            "secretctl run --name agent --allow github.com --group com.example.agent -- claude",
            "secretctl run -- make test                 # no secret at all",
        ])

    /// Where bwrap is looked for (Debian's bubblewrap package).
    static let bwrap = "/usr/bin/bwrap"

    static func run(_ parsed: ParsedCommand) throws(CommandLineError) {
        let command = parsed[Self.command]
        guard !command.isEmpty else { throw .usage("run needs a COMMAND after --", command: spec.name) }
        var allowances: [(service: String, account: String?)] = []
        for text in parsed[Self.allow] {
            let parts = text.split(separator: ":", maxSplits: Int.max, omittingEmptySubsequences: false)
            let service = parts.count > 1 ? parts.dropLast().joined(separator: ":") : text
            let account = parts.count > 1 ? String(parts.last!) : ""
            guard !service.isEmpty else { throw .usage("--allow takes SERVICE or SERVICE:ACCOUNT, not '\(text)'", command: spec.name) }
            allowances.append((service, account.isEmpty ? nil : account))
        }
        let group = parsed[Self.group]
        if let group, group != AccessGroupNames.defaultGroup, !AccessGroupNames.isGroupName(group) {
            throw .usage("'\(group)' is not a group name", command: spec.name)
        }
        let base = String((command[0].split(separator: "/").last ?? "run").filter { $0.isLetter || $0.isNumber || "-_.".contains($0) })
        let runName = parsed[Self.name] ?? "\(base.isEmpty ? "run" : base)-\(getpid())"
        guard access(Self.bwrap, X_OK) == 0 else {
            throw .failure("secretctl run needs bwrap (apt install bubblewrap)", status: .failed)
        }

        var info: [Int32] = [0, 0]
        var block: [Int32] = [0, 0]
        guard pipe(&info) == 0, pipe(&block) == 0 else {
            throw .failure("cannot make a pipe: \(String(cString: strerror(errno)))", status: .failed)
        }
        let arguments = [
            Self.bwrap, "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "--die-with-parent",
            "--info-fd", "3", "--block-fd", "4", "--",
        ] + command
        var environment = ProcessInfo.processInfo.environment
        environment["SECRETCTL_RUN"] = runName
        let spawned = ProcessSpawning.spawn(arguments, environment: environment, descriptors: [(3, info[1]), (4, block[0])])
        close(info[1])
        close(block[0])
        guard case .success(let sandbox) = spawned else {
            close(info[0])
            close(block[1])
            throw .failure("cannot start bwrap: \(spawned)", status: .failed)
        }
        // From here on COMMAND must not run unless secretd knows its namespace: it waits for
        // the block descriptor to be written to or closed, so everything bwrap made is killed,
        // and bwrap reaped (which delivers its children's death signal), before it is closed.
        var childPid: Int32?
        func abandon(_ error: CommandLineError) -> CommandLineError {
            if let childPid { kill(childPid, SIGKILL) }
            kill(sandbox, SIGKILL)
            _ = ProcessSpawning.waitForExit(sandbox)
            close(block[1])
            return error
        }
        for descriptor in [info[0], block[1]] { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        let report = Self.readReport(info[0])
        close(info[0])
        childPid = Self.childPid(in: report)
        guard let pid = childPid else {
            throw abandon(.failure("bwrap could not make the run's namespace (its message is above)", status: .failed))
        }
        do throws(KeychainError) {
            try KeychainProvider.beginRun(name: runName, allow: allowances, group: group, pid: pid)
        } catch {
            throw abandon(CommandLineError(error))
        }
        // secretctl waits; the terminal's ^C and ^\ reach COMMAND, in the same process group.
        signal(SIGINT, SIG_IGN)
        signal(SIGQUIT, SIG_IGN)
        _ = write(block[1], "g", 1)
        close(block[1])
        let status = ProcessSpawning.waitForExit(sandbox)
        try? KeychainProvider.endRun(name: runName)
        exit(status)
    }

    /// bwrap's `--info-fd` report: read until its JSON object closes, or the descriptor ends
    /// (bwrap failed).
    private static func readReport(_ descriptor: Int32) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !bytes.contains(UInt8(ascii: "}")), bytes.count < 65_536 {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The `"child-pid": N` of bwrap's `--info-fd` report.
    static func childPid(in report: String) -> Int32? {
        guard let after = report.split(separator: "\"child-pid\"", maxSplits: 1).dropFirst().first else { return nil }
        return Int32(after.drop { $0 == ":" || $0 == " " }.prefix { $0.isNumber })
    }
}
