// The bus connection as a source of the GLib main loop: sd-bus says which events it waits for
// and when its next timeout is; the loop polls its socket and calls sd_bus_process when there
// is something to do. One thread reads, dispatches and replies: no hand-offs.

internal import CGio
internal import CSystemd
import Glibc

extension BusServer {
    /// The server whose connection the source drives (one per process).
    nonisolated(unsafe) static var sourceServer: BusServer?

    /// At most this many messages are read in one go: reading is cheap (a call over its
    /// client's quota is refused as it is read), so under a flood secretd reads ahead to the
    /// other clients' calls and the bus's replies.
    static let messagesReadPerDispatch = 1024
    /// At most this many calls are handled in one go, so timers and other sources get their
    /// turn under a flood of calls.
    static let callsPerDispatch = 64

    /// Adds the connection to the default main context.
    func attachToMainLoop() {
        Self.sourceServer = self
        let source = g_source_new(Self.sourceFunctions, UInt32(MemoryLayout<GSource>.size))!
        sourceTag = g_source_add_unix_fd(source, sd_bus_get_fd(bus), G_IO_IN)
        watchedCondition = G_IO_IN.rawValue
        g_source_set_priority(source, G_PRIORITY_DEFAULT)
        // GLib takes a source's descriptors out of the poll set around each dispatch unless it
        // may recurse, and each removal and return wakes the loop (two eventfd writes, then an
        // extra poll and read per call). secretd runs no nested loop; `dispatching` guards anyway.
        g_source_set_can_recurse(source, 1)
        g_source_attach(source, nil)
    }

    /// What sd-bus waits for now, and whether it has work without waiting (messages it has
    /// read but not dispatched, or a timeout already due).
    fileprivate func prepare(_ source: UnsafeMutablePointer<GSource>, timeout: UnsafeMutablePointer<gint>?) -> Bool {
        if let sourceTag {
            let events = sd_bus_get_events(bus)
            var condition = G_IO_ERR.rawValue | G_IO_HUP.rawValue
            if events > 0 {
                if Int16(events) & Int16(POLLIN) != 0 { condition |= G_IO_IN.rawValue }
                if Int16(events) & Int16(POLLOUT) != 0 { condition |= G_IO_OUT.rawValue }
            }
            // Only on a change: each modification wakes the main context up again.
            if condition != watchedCondition {
                watchedCondition = condition
                g_source_modify_unix_fd(source, sourceTag, GIOCondition(rawValue: condition))
            }
        }
        let wait = millisecondsUntilTimeout()
        timeout?.pointee = wait
        return wait == 0 || hasMoreToProcess
    }

    /// -1 when sd-bus has no timeout, else milliseconds (rounded up) until it is due.
    private func millisecondsUntilTimeout() -> gint {
        var due: UInt64 = 0
        guard sd_bus_get_timeout(bus, &due) > 0, due != UInt64.max else { return -1 }
        let current = UInt64(g_get_monotonic_time())  // CLOCK_MONOTONIC, as sd-bus's timeouts
        guard due > current else { return 0 }
        return gint(min((due - current + 999) / 1000, UInt64(Int32.max)))
    }

    fileprivate func check(_ source: UnsafeMutablePointer<GSource>) -> Bool {
        guard let sourceTag else { return false }
        return g_source_query_unix_fd(source, sourceTag).rawValue != 0 || millisecondsUntilTimeout() == 0 || hasMoreToProcess
    }

    /// Lets sd-bus read (calls are queued for their turn), write and run its callbacks, then
    /// handles queued calls; gives up the connection when it is gone.
    fileprivate func dispatch() {
        guard !dispatching else { return }  // sd_bus_process is not reentrant
        dispatching = true
        defer { dispatching = false }
        var readAll = false
        for _ in 0..<Self.messagesReadPerDispatch {
            let result = sd_bus_process(bus, nil)
            if result < 0 {
                // A message sd-bus failed to handle itself (Peer.GetMachineId where
                // /etc/machine-id is empty: ENOMEDIUM) costs that call its answer, not secretd
                // its connection; only a connection that is closed ends the daemon.
                guard sd_bus_is_open(bus) <= 0 else {
                    Log.warning("sd-bus could not handle a message: \(String(cString: strerror(-result))); going on")
                    continue
                }
                connectionLost(reason: String(cString: strerror(-result)))
                return
            }
            if result == 0 {
                readAll = true
                break
            }
        }
        serveQueuedCalls(upTo: Self.callsPerDispatch)
        hasMoreToProcess = !readAll || hasQueuedCalls
        endTurn(moreToDo: hasMoreToProcess)
    }

    nonisolated(unsafe) private static let sourceFunctions: UnsafeMutablePointer<GSourceFuncs> = {
        let functions = UnsafeMutablePointer<GSourceFuncs>.allocate(capacity: 1)  // lives for the process
        functions.initialize(to: GSourceFuncs(
            prepare: { source, timeout in
                guard let source, let server = BusServer.sourceServer else { return 0 }
                return server.prepare(source, timeout: timeout) ? 1 : 0
            },
            check: { source in
                guard let source, let server = BusServer.sourceServer else { return 0 }
                return server.check(source) ? 1 : 0
            },
            dispatch: { _, _, _ in
                BusServer.sourceServer?.dispatch()
                return 1  // G_SOURCE_CONTINUE
            },
            finalize: nil, closure_callback: nil, closure_marshal: nil))
        return functions
    }()
}
