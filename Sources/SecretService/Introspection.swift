import KeychainCore

/// The interfaces secretd serves, each declared once (``BusInterface``): the dispatcher
/// (SDBus.swift) checks every call against them, and `Introspect` answers with XML written from
/// them.
enum Introspection {
    static let service = SecretServiceNames.Interface.service
    static let collection = SecretServiceNames.Interface.collection
    static let item = SecretServiceNames.Interface.item
    static let session = SecretServiceNames.Interface.session
    static let prompt = SecretServiceNames.Interface.prompt
    /// gnome-keyring's extension for password-based unlock, creation and change.
    static let gnomeExtension = SecretServiceNames.Interface.gnomeExtension
    /// secretd's own interface for access groups (see secretd(1)).
    static let accessGroups = SecretServiceNames.Interface.accessGroups
    /// secretd's own interface for importing keyrings (see secretd(1)).
    static let importing = SecretServiceNames.Interface.importing
    /// secretd's own interface for the portal's app keys (see secretd(1)).
    static let appKeys = SecretServiceNames.Interface.appKeys
    /// secretd's own interface for quick unlock with a PIN (see secretd(1)).
    static let quickUnlock = SecretServiceNames.Interface.quickUnlock
    /// secretd's own: lock every keyring, after-first-unlock items too.
    static let locking = SecretServiceNames.Interface.locking
    /// secretd's own: the login keyring's TPM slot.
    static let tpm = SecretServiceNames.Interface.tpm
    /// secretd's own: sync between a person's machines.
    static let sync = SecretServiceNames.Interface.sync
    /// The desktop portal's Secret backend, and its request handles.
    static let portalSecret = PortalNames.secretInterface
    static let portalRequest = PortalNames.requestInterface
    /// The standard interfaces every object has (sd-bus answers `Peer` itself).
    static let properties = SecretServiceNames.Interface.properties
    static let introspectable = "org.freedesktop.DBus.Introspectable"
    static let peer = SecretServiceNames.Interface.peer

    private typealias Argument = BusInterface.Argument
    private typealias Method = BusInterface.Method
    private typealias Property = BusInterface.Property
    private typealias Signal = BusInterface.Signal

    /// A secret as the Secret Service sends it: session, parameters, value, content type.
    private static let secret = "(oayays)"

    /// Every interface secretd serves, by name.
    static let interfaces: [String: BusInterface] = Dictionary(uniqueKeysWithValues: [
        BusInterface(name: accessGroups, methods: [
            Method(name: "WhoAmI", rule: .anyClient, results: [
                Argument(name: "identity", type: "s"), Argument(name: "groups", type: "as"),
                Argument(name: "default_group", type: "s"), Argument(name: "confined", type: "b"),
            ], repliesLater: true),
            Method(name: "GetPolicy", rule: .unconfined, results: [Argument(name: "groups", type: "a(sbas)"), Argument(name: "apps", type: "a{sas}")],
                   repliesLater: true),
            Method(name: "AddMember", rule: .unconfined, arguments: [
                Argument(name: "group", type: "s"), Argument(name: "identity", type: "s"),
                Argument(name: "login_password", type: secret),
            ], results: [Argument(name: "prompt", type: "o")], repliesLater: true),
            Method(name: "RemoveMember", rule: .unconfined, arguments: [
                Argument(name: "group", type: "s"), Argument(name: "identity", type: "s"),
                Argument(name: "login_password", type: secret),
            ], results: [Argument(name: "prompt", type: "o")], repliesLater: true),
        ]),
        BusInterface(name: appKeys, methods: [
            Method(name: "List", rule: .unconfined, results: [Argument(name: "keys", type: "a(sst)")]),
            Method(name: "Delete", rule: .unconfined, arguments: [Argument(name: "app_id", type: "s")], results: [Argument(name: "deleted", type: "b")]),
        ]),
        BusInterface(name: locking, methods: [Method(name: "LockAll", rule: .unconfined)]),
        BusInterface(name: tpm, methods: [
            Method(name: "Enroll", rule: .unconfined, arguments: [Argument(name: "pcrs", type: "au"), Argument(name: "login_password", type: secret)],
                   repliesLater: true),
            Method(name: "Remove", rule: .unconfined, results: [Argument(name: "removed", type: "b")]),
            Method(name: "GetStatus", rule: .unconfined, results: [
                Argument(name: "enrolled", type: "b"), Argument(name: "pcrs", type: "au"), Argument(name: "tcti", type: "s"),
                Argument(name: "last_failure", type: "s"),
            ]),
        ]),
        BusInterface(name: sync, methods: [
            Method(name: "Init", rule: .unconfined, arguments: [Argument(name: "collection", type: "s"), Argument(name: "remote", type: "s")],
                   results: [Argument(name: "device", type: "s"), Argument(name: "code", type: "s")], repliesLater: true),
            Method(name: "Join", rule: .unconfined, arguments: [Argument(name: "collection", type: "s"), Argument(name: "remote", type: "s")],
                   results: [Argument(name: "device", type: "s"), Argument(name: "code", type: "s")], repliesLater: true),
            Method(name: "Approve", rule: .unconfined, arguments: [
                Argument(name: "collection", type: "s"), Argument(name: "device", type: "s"), Argument(name: "code", type: "s"),
            ], repliesLater: true),
            Method(name: "Remove", rule: .unconfined, arguments: [Argument(name: "collection", type: "s"), Argument(name: "device", type: "s")],
                   repliesLater: true),
            Method(name: "Leave", rule: .unconfined, arguments: [Argument(name: "collection", type: "s")], repliesLater: true),
            Method(name: "SyncNow", rule: .unconfined, arguments: [Argument(name: "collection", type: "s")], results: [
                Argument(name: "published", type: "u"), Argument(name: "received", type: "u"), Argument(name: "conflicts", type: "u"),
                Argument(name: "refused", type: "as"),
            ], repliesLater: true),
            Method(name: "GetStatus", rule: .unconfined, arguments: [Argument(name: "collection", type: "s")], results: [
                Argument(name: "remote", type: "s"), Argument(name: "device", type: "s"), Argument(name: "code", type: "s"),
                Argument(name: "waiting", type: "b"), Argument(name: "devices", type: "as"), Argument(name: "pending", type: "a(ss)"),
                Argument(name: "last_sync", type: "t"), Argument(name: "last_error", type: "s"), Argument(name: "unpublished", type: "u"),
                Argument(name: "conflicts_resolved", type: "u"), Argument(name: "refused", type: "as"),
            ], repliesLater: true),
            Method(name: "GetHistory", rule: .unconfined, arguments: [Argument(name: "collection", type: "s"), Argument(name: "attributes", type: "a{ss}")],
                   results: [Argument(name: "versions", type: "a(ttsbs)")], repliesLater: true),
            Method(name: "RestoreVersion", rule: .unconfined, arguments: [
                Argument(name: "collection", type: "s"), Argument(name: "attributes", type: "a{ss}"), Argument(name: "version", type: "t"),
            ], repliesLater: true),
        ]),
        BusInterface(name: quickUnlock, methods: [
            Method(name: "SetPin", rule: .unconfined, arguments: [Argument(name: "login_password", type: secret), Argument(name: "pin", type: secret)],
                   repliesLater: true),
            Method(name: "ClearPin", rule: .unconfined, results: [Argument(name: "was_set", type: "b")], repliesLater: true),
            Method(name: "UnlockWithPin", rule: .unconfined, arguments: [Argument(name: "pin", type: secret)], repliesLater: true),
            Method(name: "GetPinStatus", rule: .unconfined, results: [Argument(name: "set", type: "b"), Argument(name: "tries_left", type: "u")],
                   repliesLater: true),
        ]),
        BusInterface(name: portalSecret, methods: [
            Method(name: "RetrieveSecret", rule: .portalFrontend, arguments: [
                Argument(name: "handle", type: "o"), Argument(name: "app_id", type: "s"), Argument(name: "fd", type: "h"),
                Argument(name: "options", type: "a{sv}"),
            ], results: [Argument(name: "response", type: "u"), Argument(name: "results", type: "a{sv}")], repliesLater: true),
        ], properties: [
            Property(name: "version", type: "u"),
        ]),
        BusInterface(name: portalRequest, methods: [Method(name: "Close", rule: .objectOwner)]),
        BusInterface(name: importing, methods: [
            Method(name: "ImportKeyring", rule: .unconfined, arguments: [
                Argument(name: "name", type: "s"), Argument(name: "properties", type: "a{sv}"),
                Argument(name: "master", type: secret), Argument(name: "items", type: "a(a{sv}\(secret))"),
            ], results: [
                Argument(name: "collection", type: "o"), Argument(name: "imported", type: "u"), Argument(name: "skipped", type: "u"),
            ], repliesLater: true),
        ]),
        BusInterface(name: service, methods: [
            Method(name: "OpenSession", rule: .anyClient, arguments: [Argument(name: "algorithm", type: "s"), Argument(name: "input", type: "v")],
                   results: [Argument(name: "output", type: "v"), Argument(name: "result", type: "o")]),
            Method(name: "CreateCollection", rule: .anyClient, arguments: [Argument(name: "properties", type: "a{sv}"), Argument(name: "alias", type: "s")],
                   results: [Argument(name: "collection", type: "o"), Argument(name: "prompt", type: "o")]),
            Method(name: "SearchItems", rule: .anyClient, arguments: [Argument(name: "attributes", type: "a{ss}")],
                   results: [Argument(name: "unlocked", type: "ao"), Argument(name: "locked", type: "ao")]),
            Method(name: "Unlock", rule: .anyClient, arguments: [Argument(name: "objects", type: "ao")],
                   results: [Argument(name: "unlocked", type: "ao"), Argument(name: "prompt", type: "o")]),
            Method(name: "Lock", rule: .unconfined, arguments: [Argument(name: "objects", type: "ao")],
                   results: [Argument(name: "locked", type: "ao"), Argument(name: "Prompt", type: "o")]),
            Method(name: "GetSecrets", rule: .anyClient, arguments: [Argument(name: "items", type: "ao"), Argument(name: "session", type: "o")],
                   results: [Argument(name: "secrets", type: "a{o\(secret)}")]),
            Method(name: "ReadAlias", rule: .anyClient, arguments: [Argument(name: "name", type: "s")], results: [Argument(name: "collection", type: "o")]),
            Method(name: "SetAlias", rule: .unconfined, arguments: [Argument(name: "name", type: "s"), Argument(name: "collection", type: "o")]),
        ], properties: [
            Property(name: "Collections", type: "ao"),
        ], signals: [
            Signal(name: "CollectionCreated", arguments: [Argument(name: "collection", type: "o")]),
            Signal(name: "CollectionDeleted", arguments: [Argument(name: "collection", type: "o")]),
            Signal(name: "CollectionChanged", arguments: [Argument(name: "collection", type: "o")]),
        ]),
        BusInterface(name: gnomeExtension, methods: [
            Method(name: "ChangeWithMasterPassword", rule: .unconfined, arguments: [
                Argument(name: "collection", type: "o"), Argument(name: "original", type: secret), Argument(name: "master", type: secret),
            ], repliesLater: true),
            Method(name: "ChangeWithPrompt", rule: .unconfined, arguments: [Argument(name: "collection", type: "o")], results: [Argument(name: "prompt", type: "o")],
                   repliesLater: true),
            Method(name: "CreateWithMasterPassword", rule: .unconfined, arguments: [Argument(name: "attributes", type: "a{sv}"), Argument(name: "master", type: secret)],
                   results: [Argument(name: "collection", type: "o")], repliesLater: true),
            Method(name: "UnlockWithMasterPassword", rule: .anyClient, arguments: [Argument(name: "collection", type: "o"), Argument(name: "master", type: secret)],
                   repliesLater: true),
        ]),
        BusInterface(name: collection, methods: [
            Method(name: "Delete", rule: .unconfined, results: [Argument(name: "prompt", type: "o")]),
            Method(name: "SearchItems", rule: .anyClient, arguments: [Argument(name: "attributes", type: "a{ss}")], results: [Argument(name: "results", type: "ao")]),
            Method(name: "CreateItem", rule: .anyClient, arguments: [
                Argument(name: "properties", type: "a{sv}"), Argument(name: "secret", type: secret), Argument(name: "replace", type: "b"),
            ], results: [Argument(name: "item", type: "o"), Argument(name: "prompt", type: "o")]),
        ], properties: [
            Property(name: "Items", type: "ao"),
            Property(name: "Label", type: "s", writableBy: .unconfined),
            Property(name: "Locked", type: "b"),
            Property(name: "Created", type: "t"),
            Property(name: "Modified", type: "t"),
        ], signals: [
            Signal(name: "ItemCreated", arguments: [Argument(name: "item", type: "o")]),
            Signal(name: "ItemDeleted", arguments: [Argument(name: "item", type: "o")]),
            Signal(name: "ItemChanged", arguments: [Argument(name: "item", type: "o")]),
        ]),
        BusInterface(name: item, methods: [
            Method(name: "Delete", rule: .itemGroup, results: [Argument(name: "Prompt", type: "o")]),
            Method(name: "GetSecret", rule: .itemGroup, arguments: [Argument(name: "session", type: "o")], results: [Argument(name: "secret", type: secret)]),
            Method(name: "SetSecret", rule: .itemGroup, arguments: [Argument(name: "secret", type: secret)]),
        ], properties: [
            Property(name: "Locked", type: "b"),
            Property(name: "Attributes", type: "a{ss}", writableBy: .itemGroup),
            Property(name: "Label", type: "s", writableBy: .itemGroup),
            Property(name: "Type", type: "s"),
            Property(name: "Created", type: "t"),
            Property(name: "Modified", type: "t"),
        ]),
        BusInterface(name: session, methods: [Method(name: "Close", rule: .objectOwner)]),
        BusInterface(name: prompt, methods: [
            Method(name: "Prompt", rule: .objectOwner, arguments: [Argument(name: "window-id", type: "s")]),
            Method(name: "Dismiss", rule: .objectOwner),
        ], signals: [
            Signal(name: "Completed", arguments: [Argument(name: "dismissed", type: "b"), Argument(name: "result", type: "v")]),
        ]),
    ].map { ($0.name, $0) })

    /// The standard interfaces, as every object lists them.
    private static let standardXML = """
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Peer">
            <method name="Ping"/>
            <method name="GetMachineId"><arg name="machine_uuid" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get"><arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/><arg name="value" type="v" direction="out"/></method>
            <method name="GetAll"><arg name="interface_name" type="s" direction="in"/><arg name="props" type="a{sv}" direction="out"/></method>
            <method name="Set"><arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/><arg name="value" type="v" direction="in"/></method>
            <signal name="PropertiesChanged"><arg name="interface_name" type="s"/><arg name="changed_properties" type="a{sv}"/><arg name="invalidated_properties" type="as"/></signal>
          </interface>

        """

    /// The introspection XML of an object that implements `names` and has `children`.
    static func xml(interfaces names: [String], children: [String]) -> String {
        var text = "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n"
            + " \"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>\n"
        if !names.isEmpty { text += standardXML }
        for name in names { if let interface = interfaces[name] { text += interface.xml } }
        for child in children { text += "  <node name=\"\(child)\"/>\n" }
        return text + "</node>\n"
    }
}
