import DBusValues

/// One D-Bus interface secretd serves: the kind of object that has it, its methods (each with
/// who may call it and its handler), properties and signals, declared once, beside the
/// handlers. The dispatcher checks each call's arguments against ``Method/inSignature`` and
/// each property access against ``properties``, the daemon checks who calls against each
/// method's ``Method/rule`` (``CallerRule``) and then runs its ``Method/handler``, the objects'
/// interfaces are those declared for their kind, and the introspection XML is written from the
/// same declaration (``Introspection``): adding a method is one entry and its handler.
struct BusInterface: Sendable {
    /// The kinds of object secretd serves.
    enum ObjectKind: Sendable {
        /// `/org/freedesktop/secrets`.
        case service
        /// A collection, at its path or an alias's.
        case collection
        /// An item.
        case item
        /// A client's session.
        case session
        /// A client's prompt.
        case prompt
        /// The desktop portal backend.
        case portal
        /// A portal request handle.
        case portalRequest
    }

    /// One argument: a name for the introspection data and a single complete D-Bus type.
    struct Argument: Sendable {
        /// The name shown in the introspection data.
        var name: String
        /// Its D-Bus type signature.
        var type: String
    }

    /// A method and its arguments.
    struct Method: Sendable {
        /// The method name.
        var name: String
        /// Who may call it; checked before its handler runs.
        var rule: CallerRule
        /// What the caller sends.
        var arguments: [Argument] = []
        /// What the reply carries.
        var results: [Argument] = []
        /// What answers it.
        var handler: MethodHandler
        /// Whether the handler may answer after returning (``BusHandler/handle(_:replyLater:)``).
        var repliesLater: Bool {
            if case .later = handler { return true }
            return false
        }
        /// The signature a call must have: its arguments' types, concatenated.
        var inSignature: String { arguments.map(\.type).joined() }
    }

    /// A property, with what reads it and, if it may be written, who may and what writes it.
    struct Property: Sendable {
        /// Who may write a property, and what writes it.
        struct Setter: Sendable {
            /// Who may write it with `Properties.Set`.
            var rule: CallerRule
            /// Writes the value, of the property's type.
            var write: @Sendable (Provider, PropertyWrite) throws(SecretServiceError) -> Void
        }

        /// The property name.
        var name: String
        /// Its D-Bus type signature.
        var type: String
        /// Reads it from the object (looked up once for all of a `GetAll`'s reads). Reading
        /// follows the object: an item a client may not see has no properties for it.
        var read: @Sendable (Provider, PropertyRead) throws(SecretServiceError) -> DBusValue
        /// Who may write it and what writes it; nil: nobody (read-only).
        var setter: Setter? = nil
        /// Who may write it with `Properties.Set`; nil: nobody.
        var writableBy: CallerRule? { setter?.rule }
        /// Whether `Properties.Set` may write it at all.
        var writable: Bool { setter != nil }
    }

    /// A signal and its arguments.
    struct Signal: Sendable {
        /// The signal name.
        var name: String
        /// What it carries.
        var arguments: [Argument] = []
    }

    /// The interface name.
    var name: String
    /// The kind of object that has it.
    var objects: ObjectKind
    /// Its methods.
    var methods: [Method] = []
    /// Its properties.
    var properties: [Property] = []
    /// Its signals.
    var signals: [Signal] = []

    /// The method called `name`, if the interface has one.
    func method(_ name: String) -> Method? { methods.first { $0.name == name } }

    /// The property called `name`, if the interface has one.
    func property(_ name: String) -> Property? { properties.first { $0.name == name } }

    /// The `<interface>` element of the introspection data.
    var xml: String {
        func arguments(_ list: [Argument], direction: String?) -> String {
            list.map { argument in
                let way = direction.map { " direction=\"\($0)\"" } ?? ""
                return "<arg name=\"\(argument.name)\" type=\"\(argument.type)\"\(way)/>"
            }.joined()
        }
        var text = "  <interface name=\"\(name)\">\n"
        for method in methods {
            text += "    <method name=\"\(method.name)\">"
                + arguments(method.arguments, direction: "in") + arguments(method.results, direction: "out") + "</method>\n"
        }
        for signal in signals {
            text += "    <signal name=\"\(signal.name)\">" + arguments(signal.arguments, direction: nil) + "</signal>\n"
        }
        for property in properties {
            text += "    <property name=\"\(property.name)\" type=\"\(property.type)\" access=\"\(property.writable ? "readwrite" : "read")\"/>\n"
        }
        return text + "  </interface>\n"
    }
}
