// org.freedesktop.Secret.Prompt: asking the person through pinentry, off the main loop.

import KeychainCore
import FoundationEssentials
import Pinentry
import SecretCrypto
import SecretStore
import DBusValues

extension Provider {
    /// How many times a wrong password may be typed in one unlock prompt.
    static let promptAttempts = 3

    /// Asks the person what prompt `id` needs, on a thread of its own; completes it as dismissed
    /// when there is no pinentry to ask through.
    func startConversation(promptID id: Int) {
        guard let prompt = prompts[id] else { return }
        prompt.started = true
        guard let program = options.configuration.pinentry else {
            // No way to ask anybody: complete as dismissed, after the reply is sent.
            MainLoop.after(seconds: 0) { [weak self] in self?.complete(id: id, result: nil) }
            return
        }
        let box = ProviderBox(self)
        guard DetachedThread.start(named: "secretd-prompt", { box.provider.converse(promptID: id, program: program) }) else {
            Log.warning("cannot start a thread for prompt \(id); it completes as dismissed")
            MainLoop.after(seconds: 0) { [weak self] in self?.complete(id: id, result: nil) }
            return
        }
    }

    /// Emits `Completed` once for prompt `id`, to its owner only (as gnome-keyring does): the
    /// result names the objects it unlocked or created, items of its groups among them. It is
    /// dismissed when `result` is nil. A pinentry still asking (the prompt was dismissed) is
    /// closed.
    func complete(id: Int, result: DBusValue?) {
        guard let prompt = prompts[id], !prompt.finished else { return }
        prompt.finished = true
        prompts.remove(id)
        prompt.cancellation.cancel()
        if let completion = prompt.completion { return keyring.apartWrites.whenWriteEnds { completion(result) } }
        server.emitSignal(
            path: ObjectPaths.prompt(id), interface: Introspection.prompt, name: "Completed",
            arguments: [.boolean(result == nil), .variant(result ?? prompt.emptyResult)], destination: prompt.owner)
    }

    /// Runs on the prompt's own thread: asks through pinentry, and hops to the main loop for
    /// everything that touches the daemon's state.
    /// ``MainLoop/awaiting(_:)`` for prompt `id`'s client: what `start` changes (an unlock, a
    /// new keyring, a new password) is done for it, the keyring's accessor, once no write off
    /// the loop is in progress.
    private func awaiting<T>(forPrompt id: Int, _ start: @escaping (_ completion: @escaping (T) -> Void) -> Void) -> T {
        MainLoop.awaiting { done in
            self.keyring.apartWrites.whenWriteEnds {
                let accessor = self.prompts[id].flatMap { self.callers[$0.owner]?.accessor } ?? .secretd
                self.keyring.acting(as: accessor) { start(done) }
            }
        }
    }

    /// Runs `body` on the main loop once no write off the loop is in progress (it writes), and
    /// returns its value to the prompt's thread.
    private func onLoopOutsideWrites<T>(_ body: @escaping () -> T) -> T {
        MainLoop.awaiting { done in self.keyring.apartWrites.whenWriteEnds { done(body()) } }
    }

    fileprivate func converse(promptID id: Int, program: String) {
        guard let (action, cancellation) = MainLoop.onMainLoop({ self.prompts[id].map { ($0.action, $0.cancellation) } })
        else { return }
        let asker = Asker(program: program, cancellation: cancellation)
        switch action {
        case .unlock(let collections, let groups, let objects):
            for collection in collections {
                guard askUntilUnlocked(collection, asker: asker, promptID: id) else {
                    MainLoop.onMainLoop { self.complete(id: id, result: nil) }
                    return
                }
            }
            for group in groups {
                guard askForGroup(group, asker: asker, promptID: id) else {
                    MainLoop.onMainLoop { self.complete(id: id, result: nil) }
                    return
                }
            }
            MainLoop.onMainLoop { self.complete(id: id, result: .objectPaths(objects)) }
        case .changePolicy(let change):
            confirmPolicyChange(change, asker: asker, promptID: id)
        case .changePassword(let collection):
            changePassword(collection, asker: asker, promptID: id)
        case .createCollection(let label, let alias):
            let request = PinentryRequest(
                title: "New keyring", description: "An application wants to create a new keyring called “\(label)”. "
                    + "Choose a password for it.", prompt: "Password:", error: nil, confirm: true)
            guard case .password(let password) = asker.password(request), password.count > 0 else {
                MainLoop.onMainLoop { self.complete(id: id, result: nil) }
                return
            }
            let created = self.awaiting(forPrompt: id) { done in self.createCollection(label: label, password: password, completion: done) }
            onLoopOutsideWrites {
                guard case .success(let path) = created else {
                    self.complete(id: id, result: nil)
                    return
                }
                if !alias.isEmpty, let created = self.collection(at: path) { try? self.keyring.setAlias(alias, to: created) }
                self.complete(id: id, result: .objectPath(path))
            }
        }
    }


    /// Asks whether the prompt's client may use the items of `group`: an `ask` group it is not
    /// in, or a group it is in whose `consent` asks before a new reader's first read. Deny,
    /// allow once (for as long as the client stays connected), or always allow (its identity
    /// becomes a member in `access-groups.conf`; a reader's consent is remembered, bound to its
    /// executable). True when allowed.
    private func askForGroup(_ group: String, asker: Asker, promptID id: Int) -> Bool {
        guard let (caller, alreadyAllowed, isMember) = MainLoop.onMainLoop({ () -> (Caller, Bool, Bool)? in
            guard let owner = self.prompts[id]?.owner, let caller = self.callers[owner] else { return nil }
            return (caller, self.access(caller, to: group) == .full, self.isAllowedInto(caller, group))
        }) else { return false }
        if alreadyAllowed { return true }
        let command = (try? String(contentsOfFile: "/proc/\(caller.pid)/comm", encoding: .utf8))?
            .trimmingWhitespace ?? "?"
        let choice = asker.choice(
            title: isMember ? "New reader of secrets" : "Access to secrets",
            description: "“\(command)” (process \(caller.pid), \(caller.identity)) wants to "
                + (isMember
                    ? "read the secrets of the access group “\(group)”, which you have not allowed it to read yet."
                    : "use the secrets of the access group “\(group)”, which it does not belong to."),
            ok: "Always allow", notOK: "Allow once", cancel: "Deny")
        return onLoopOutsideWrites {
            // Dismissed, or its client gone: the person's answer (if any) no longer counts.
            guard self.prompts[id] != nil else { return false }
            switch choice {
            case .ok:
                if !isMember {
                    let change = PolicyChange(add: true, group: group, identity: caller.identity.description)
                    guard case .success = self.apply(change) else { return false }
                }
                if self.consents.mode(of: group, in: self.policy) == .newReaders {
                    do throws(StoreError) {
                        try self.consents.rememberAlways(caller, reading: group)
                    } catch {
                        Log.error("cannot remember the consent for \(caller.identity): \(error); it is allowed once")
                        caller.allowedOnce.insert(group)
                    }
                }
                return true
            case .notOK:
                caller.allowedOnce.insert(group)
                Log.info("allowed \(caller.identity) into the access group \(group) once")
                return true
            case .cancelled:
                caller.denied.insert(group)
                Log.info("denied \(caller.identity) the access group \(group)")
                return false
            case .failed(let reason):
                Log.warning("cannot ask about the access group \(group): \(reason)" + (isMember ? "; \(self.consentMissing(caller, group))" : ""))
                return false
            }
        }
    }

    /// Asks for the login password to confirm a change to the access group policy.
    private func confirmPolicyChange(_ change: PolicyChange, asker: Asker, promptID id: Int) {
        let requester = MainLoop.onMainLoop { () -> String in
            guard let owner = self.prompts[id]?.owner, let caller = self.callers[owner] else { return "An application" }
            return "\(caller.identity)"
        }
        var error: String?
        attempts: for _ in 0..<Self.promptAttempts {
            let what = change.kind == .reader
                ? "let \(change.identity) read the secrets of the access group “\(change.group)” without asking"
                : "\(change.add ? "add" : "remove") \(change.identity) \(change.add ? "to" : "from") the access group “\(change.group)”"
            let request = PinentryRequest(
                title: change.kind == .reader ? "Allow a reader" : "Change access groups",
                description: "\(requester) wants to \(what). Enter the login password to allow it.",
                prompt: "Password:", error: error)
            guard case .password(let password) = asker.password(request) else { break }
            let wait = MainLoop.onMainLoop { () -> TimeInterval in
                guard let login = try? self.keyring.collection(named: Self.loginName) else { return 0 }
                return self.unlockDelay(login)
            }
            if wait > 0 { DetachedThread.sleep(seconds: wait) }
            let verified = self.awaiting(forPrompt: id) { done in
                self.verifyLoginPassword(password) { verified in done(verified.flatMap { self.apply(change) }) }
            }
            switch verified {
            case .success:
                MainLoop.onMainLoop { self.complete(id: id, result: .boolean(true)) }
                return
            case .failure(.accessDenied(let message)):
                error = message
            case .failure:
                break attempts
            }
        }
        MainLoop.onMainLoop { self.complete(id: id, result: nil) }
    }

    /// Asks for the current password (verified through the store), then a new one twice.
    private func changePassword(_ collection: Store.CollectionRecord, asker: Asker, promptID id: Int) {
        let current = PinentryRequest(
            title: "Change keyring password", description: "An application wants to change the password of the keyring "
                + "“\(collection.label)”. Enter its current password.", prompt: "Current:", error: nil)
        guard case .password(let old) = asker.password(current) else {
            MainLoop.onMainLoop { self.complete(id: id, result: nil) }
            return
        }
        let fresh = PinentryRequest(
            title: "Change keyring password", description: "Choose the new password of the keyring “\(collection.label)”.",
            prompt: "New:", error: nil, confirm: true)
        guard case .password(let new) = asker.password(fresh), new.count > 0 else {
            MainLoop.onMainLoop { self.complete(id: id, result: nil) }
            return
        }
        let changed = self.awaiting(forPrompt: id) { done in self.changePassword(of: collection, from: old, to: new, completion: done) }
        MainLoop.onMainLoop {
            switch changed {
            case .success:
                self.complete(id: id, result: .string(""))
            case .failure(let refusal):
                Log.warning("the password of the \(collection.name) keyring was not changed: \(refusal.message)")
                self.complete(id: id, result: nil)
            }
        }
    }

    /// Asks for `collection`'s password until it unlocks, the person cancels, or the attempts
    /// run out; true when it is unlocked.
    private func askUntilUnlocked(_ collection: Store.CollectionRecord, asker: Asker, promptID id: Int) -> Bool {
        var error: String?
        // A PIN first, while one is set: an empty answer asks for the password instead.
        while MainLoop.onMainLoop({ self.asksForPIN(collection) && self.keyring.isLocked(collection) && self.prompts[id] != nil }) {
            let requester = MainLoop.onMainLoop { self.prompts[id]?.requester } ?? "An application"
            let request = PinentryRequest(
                title: "Unlock keyring", description: "\(requester) wants access to the keyring “\(collection.label)”, "
                    + "but it is locked. Enter your PIN, or leave it empty to type the password instead.",
                prompt: "PIN:", error: error)
            guard case .password(let pin) = asker.password(request) else { return false }
            if pin.count == 0 {
                error = nil
                break
            }
            let wait = MainLoop.onMainLoop { self.unlockDelay(collection) }
            if wait > 0 { DetachedThread.sleep(seconds: wait) }
            switch self.awaiting(forPrompt: id, { done in self.unlockWithPIN(pin, completion: done) }) {
            case .success: return true
            case .failure(let failure): error = failure.message
            }
        }
        for _ in 0..<Self.promptAttempts {
            if MainLoop.onMainLoop({ !self.keyring.isLocked(collection) || self.prompts[id] == nil }) {
                return MainLoop.onMainLoop { !self.keyring.isLocked(collection) }
            }
            let requester = MainLoop.onMainLoop { self.prompts[id]?.requester } ?? "An application"
            let request = PinentryRequest(
                title: "Unlock keyring", description: "\(requester) wants access to the keyring “\(collection.label)”, "
                    + "but it is locked.", prompt: "Password:", error: error)
            switch asker.password(request) {
            case .cancelled:
                return false
            case .failed(let reason):
                Log.warning("cannot ask for a password: \(reason)")
                return false
            case .password(let password):
                // Honour the wait after wrong passwords here, on the prompt's thread.
                let wait = MainLoop.onMainLoop { self.unlockDelay(collection) }
                if wait > 0 { DetachedThread.sleep(seconds: wait) }
                let result = self.awaiting(forPrompt: id) { done in self.unlock(collection, password: password, completion: done) }
                switch result {
                case .success: return true
                case .failure(let failure): error = failure.message
                }
            }
        }
        return false
    }
}

/// One prompt's way of asking: its pinentry program, and the cancellation that closes the
/// dialog when the prompt ends early.
private struct Asker {
    let program: String
    let cancellation: PinentryCancellation

    /// Asks for a password; it goes straight into secure memory.
    func password(_ request: PinentryRequest) -> PinentryOutcome<SecureBytes> {
        Pinentry.ask(program: program, request, cancellation: cancellation) { SecureBytes(copying: $0) }
    }

    /// Asks the person to press one of three buttons.
    func choice(title: String, description: String, ok: String, notOK: String, cancel: String) -> PinentryChoice {
        Pinentry.choose(
            program: program, title: title, description: description, ok: ok, notOK: notOK, cancel: cancel,
            cancellation: cancellation)
    }
}

/// Carries the daemon to a prompt thread; it is only used there through ``BusServer/onMainLoop(_:)``
/// and for the pinentry conversation, which touches no daemon state.
private final class ProviderBox: @unchecked Sendable {
    let provider: Provider
    init(_ provider: Provider) { self.provider = provider }
}
