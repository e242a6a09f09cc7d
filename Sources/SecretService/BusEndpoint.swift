import DBusValues

/// What the daemon needs from its bus connection while it serves: sending signals and asking
/// the bus who a client is. ``BusServer`` is the real one; in-process tests hand the daemon
/// their own (``Provider/serve(on:)``), call its handlers directly and read what it sent.
protocol BusEndpoint: AnyObject {
    /// Sends a signal, to `destination` only when one is given; true when it waits for the
    /// commit of the writes before it.
    @discardableResult
    func emitSignal(path: String, interface: String, name: String, arguments: [DBusValue], destination: String?) -> Bool
    /// Sends `org.freedesktop.DBus.Properties.PropertiesChanged`.
    func emitPropertiesChanged(
        path: String, interface: String, changed: [String: DBusValue], invalidated: [String], destination: String?)
    /// The uid and pid the bus recorded for `sender`, waiting for the answer.
    func credentials(of sender: String) -> (uid: UInt32, pid: UInt32?)?
    /// The same, without waiting: `completion` runs on the main loop.
    func credentials(of sender: String, completion: @escaping ((uid: UInt32, pid: UInt32?)?) -> Void)
}

extension BusEndpoint {
    /// Broadcasts a signal.
    @discardableResult
    func emitSignal(path: String, interface: String, name: String, arguments: [DBusValue]) -> Bool {
        emitSignal(path: path, interface: interface, name: name, arguments: arguments, destination: nil)
    }

    /// Sends new property values to `destination` only.
    func emitPropertiesChanged(path: String, interface: String, changed: [String: DBusValue], destination: String) {
        emitPropertiesChanged(path: path, interface: interface, changed: changed, invalidated: [], destination: destination)
    }

    /// Broadcasts new property values and invalidated property names.
    func emitPropertiesChanged(path: String, interface: String, changed: [String: DBusValue], invalidated: [String] = []) {
        emitPropertiesChanged(path: path, interface: interface, changed: changed, invalidated: invalidated, destination: nil)
    }
}

extension BusServer: BusEndpoint {}
