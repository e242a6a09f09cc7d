import KeychainCore

/// The interfaces secretd serves, each declared once (``BusInterface``) beside its handlers:
/// the dispatcher (SDBus.swift) checks every call against them, the daemon routes each admitted
/// call to its method's handler, and `Introspect` answers with XML written from them.
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
    /// secretd's own: the store's check (and backups).
    static let maintenance = SecretServiceNames.Interface.maintenance
    /// secretd's own: the audit trail.
    static let audit = SecretServiceNames.Interface.audit
    /// secretd's own: remembered consents of readers.
    static let consent = SecretServiceNames.Interface.consent
    /// secretd's own: scoped runs.
    static let runs = SecretServiceNames.Interface.runs
    /// secretd's own: sync between a person's machines.
    static let sync = SecretServiceNames.Interface.sync
    /// The desktop portal's Secret backend, and its request handles.
    static let portalSecret = PortalNames.secretInterface
    static let portalRequest = PortalNames.requestInterface
    /// The standard interfaces every object has (sd-bus answers `Peer` itself).
    static let properties = SecretServiceNames.Interface.properties
    static let introspectable = "org.freedesktop.DBus.Introspectable"
    static let peer = SecretServiceNames.Interface.peer

    typealias Argument = BusInterface.Argument
    typealias Method = BusInterface.Method
    typealias Property = BusInterface.Property
    typealias Signal = BusInterface.Signal

    /// A secret as the Secret Service sends it: session, parameters, value, content type.
    static let secret = "(oayays)"

    /// Every interface secretd serves, each declared beside its handlers (`ServiceObject.swift`
    /// has the service's, `ItemObject.swift` the item's, and so on), in the order an object
    /// lists them.
    static let all: [BusInterface] = [
        serviceInterface, gnomeExtensionInterface, accessGroupsInterface, importingInterface, appKeysInterface,
        quickUnlockInterface, lockingInterface, tpmInterface, syncInterface, maintenanceInterface, auditInterface, consentInterface, runsInterface,
        collectionInterface, itemInterface, sessionInterface, promptInterface, portalSecretInterface, portalRequestInterface,
    ]

    /// Every interface secretd serves, by name.
    static let interfaces: [String: BusInterface] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// The names of the interfaces of the objects of `kind`.
    static func interfaces(of kind: BusInterface.ObjectKind) -> [String] {
        all.filter { $0.objects == kind }.map(\.name)
    }

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
