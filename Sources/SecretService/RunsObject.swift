// io.github.secretd.Runs1
//
// Scoped runs (secretctl run): a run begins for the PID namespace secretctl made for its
// command and ends when secretctl says so or leaves the bus. What a run may see is RunScope's.

import KeychainCore
import DBusValues

extension Introspection {
    /// secretd's own: scoped runs, begun by unconfined clients outside a sandbox (its rule),
    /// never by a program inside a run.
    static let runsInterface = BusInterface(name: runs, objects: .service, methods: [
        Method(name: "Begin", rule: .unconfined, arguments: [
            Argument(name: "name", type: "s"), Argument(name: "allow", type: "a(ss)"), Argument(name: "group", type: "s"),
            Argument(name: "pid", type: "u"),
        ], results: [], handler: .now { provider, call throws(SecretServiceError) in try RunsObject(provider).begin(call) }),
        Method(name: "End", rule: .unconfined, arguments: [Argument(name: "name", type: "s")],
               results: [Argument(name: "ended", type: "b")],
               handler: .now { provider, call throws(SecretServiceError) in
                   .tuple([.boolean(provider.callers.runs.end(try call.argument(0, as: String.self), of: call.sender))])
               }),
    ])
}

/// secretd's Runs1 interface: scoped runs begun and ended.
struct RunsObject {
    /// What every object shares.
    let provider: Provider

    /// The object over `provider`.
    init(_ provider: Provider) { self.provider = provider }

    /// The longest name, service, account or group a run takes.
    static let maximumText = 256
    /// The most allowances a run takes.
    static let maximumAllowances = 256

    /// `Begin`: a run called `name` for the PID namespace of process `pid` (which the caller
    /// started): its callers see the items `allow` names (service, account or "" for any) and
    /// the items of `group` ("" for none).
    fileprivate func begin(_ call: AdmittedCall) throws(SecretServiceError) -> DBusValue {
        let name = try call.argument(0, as: String.self)
        guard case .array(_, let pairs) = try call.argument(1, as: DBusValue.self) else { throw .invalidArgs("allow must be a(ss)") }
        let group = try call.argument(2, as: String.self)
        let pid = try call.argument(3, as: UInt32.self)
        guard !name.isEmpty, name.utf8.count <= Self.maximumText, name.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }) else {
            throw .invalidArgs("a run's name is 1 to \(Self.maximumText) letters, digits, '-', '_' or '.'")
        }
        guard pairs.count <= Self.maximumAllowances else { throw .invalidArgs("a run takes at most \(Self.maximumAllowances) allowances") }
        var allowances: [RunScope.Allowance] = []
        for pair in pairs {
            guard let fields = pair.tuple, fields.count == 2, let service = fields[0].string, let account = fields[1].string,
                !service.isEmpty, service.utf8.count <= Self.maximumText, account.utf8.count <= Self.maximumText
            else { throw .invalidArgs("each allowance is a service (not empty) and an account (\"\" for any)") }
            allowances.append(RunScope.Allowance(service: service, account: account.isEmpty ? nil : account))
        }
        guard group.isEmpty || group == AccessGroupNames.defaultGroup || AccessGroupNames.isGroupName(group) else {
            throw .invalidArgs("“\(group)” is not a group name")
        }
        let caller = try provider.caller(call.sender).get()
        _ = try provider.callers.runs.begin(
            name: name, allowances: allowances, group: group.isEmpty ? nil : group, pid: Int32(bitPattern: pid),
            owner: call.sender, ownerPid: caller.pid
        ).get()
        return .tuple([])
    }
}
