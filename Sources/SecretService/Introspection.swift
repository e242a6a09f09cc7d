import KeychainCore

/// The interfaces secretd serves, as introspection XML (GDBus checks every call's argument
/// types against it and answers `InvalidArgs` for the wrong ones).
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

    static let xml = """
        <node>
          <interface name="io.github.secretd.AccessGroups1">
            <method name="WhoAmI">
              <arg name="identity" type="s" direction="out"/><arg name="groups" type="as" direction="out"/>
              <arg name="default_group" type="s" direction="out"/><arg name="confined" type="b" direction="out"/>
            </method>
            <method name="GetPolicy">
              <arg name="groups" type="a(sbas)" direction="out"/><arg name="apps" type="a{sas}" direction="out"/>
            </method>
            <method name="AddMember">
              <arg name="group" type="s" direction="in"/><arg name="identity" type="s" direction="in"/>
              <arg name="login_password" type="(oayays)" direction="in"/><arg name="prompt" type="o" direction="out"/>
            </method>
            <method name="RemoveMember">
              <arg name="group" type="s" direction="in"/><arg name="identity" type="s" direction="in"/>
              <arg name="login_password" type="(oayays)" direction="in"/><arg name="prompt" type="o" direction="out"/>
            </method>
          </interface>
          <interface name="org.freedesktop.Secret.Service">
            <method name="OpenSession">
              <arg name="algorithm" type="s" direction="in"/><arg name="input" type="v" direction="in"/>
              <arg name="output" type="v" direction="out"/><arg name="result" type="o" direction="out"/>
            </method>
            <method name="CreateCollection">
              <arg name="properties" type="a{sv}" direction="in"/><arg name="alias" type="s" direction="in"/>
              <arg name="collection" type="o" direction="out"/><arg name="prompt" type="o" direction="out"/>
            </method>
            <method name="SearchItems">
              <arg name="attributes" type="a{ss}" direction="in"/>
              <arg name="unlocked" type="ao" direction="out"/><arg name="locked" type="ao" direction="out"/>
            </method>
            <method name="Unlock">
              <arg name="objects" type="ao" direction="in"/>
              <arg name="unlocked" type="ao" direction="out"/><arg name="prompt" type="o" direction="out"/>
            </method>
            <method name="Lock">
              <arg name="objects" type="ao" direction="in"/>
              <arg name="locked" type="ao" direction="out"/><arg name="Prompt" type="o" direction="out"/>
            </method>
            <method name="GetSecrets">
              <arg name="items" type="ao" direction="in"/><arg name="session" type="o" direction="in"/>
              <arg name="secrets" type="a{o(oayays)}" direction="out"/>
            </method>
            <method name="ReadAlias">
              <arg name="name" type="s" direction="in"/><arg name="collection" type="o" direction="out"/>
            </method>
            <method name="SetAlias">
              <arg name="name" type="s" direction="in"/><arg name="collection" type="o" direction="in"/>
            </method>
            <signal name="CollectionCreated"><arg name="collection" type="o"/></signal>
            <signal name="CollectionDeleted"><arg name="collection" type="o"/></signal>
            <signal name="CollectionChanged"><arg name="collection" type="o"/></signal>
            <property name="Collections" type="ao" access="read"/>
          </interface>
          <interface name="org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface">
            <method name="ChangeWithMasterPassword">
              <arg name="collection" type="o" direction="in"/><arg name="original" type="(oayays)" direction="in"/>
              <arg name="master" type="(oayays)" direction="in"/>
            </method>
            <method name="ChangeWithPrompt">
              <arg name="collection" type="o" direction="in"/><arg name="prompt" type="o" direction="out"/>
            </method>
            <method name="CreateWithMasterPassword">
              <arg name="attributes" type="a{sv}" direction="in"/><arg name="master" type="(oayays)" direction="in"/>
              <arg name="collection" type="o" direction="out"/>
            </method>
            <method name="UnlockWithMasterPassword">
              <arg name="collection" type="o" direction="in"/><arg name="master" type="(oayays)" direction="in"/>
            </method>
          </interface>
          <interface name="org.freedesktop.Secret.Collection">
            <method name="Delete"><arg name="prompt" type="o" direction="out"/></method>
            <method name="SearchItems">
              <arg name="attributes" type="a{ss}" direction="in"/><arg name="results" type="ao" direction="out"/>
            </method>
            <method name="CreateItem">
              <arg name="properties" type="a{sv}" direction="in"/><arg name="secret" type="(oayays)" direction="in"/>
              <arg name="replace" type="b" direction="in"/>
              <arg name="item" type="o" direction="out"/><arg name="prompt" type="o" direction="out"/>
            </method>
            <signal name="ItemCreated"><arg name="item" type="o"/></signal>
            <signal name="ItemDeleted"><arg name="item" type="o"/></signal>
            <signal name="ItemChanged"><arg name="item" type="o"/></signal>
            <property name="Items" type="ao" access="read"/>
            <property name="Label" type="s" access="readwrite"/>
            <property name="Locked" type="b" access="read"/>
            <property name="Created" type="t" access="read"/>
            <property name="Modified" type="t" access="read"/>
          </interface>
          <interface name="org.freedesktop.Secret.Item">
            <method name="Delete"><arg name="Prompt" type="o" direction="out"/></method>
            <method name="GetSecret">
              <arg name="session" type="o" direction="in"/><arg name="secret" type="(oayays)" direction="out"/>
            </method>
            <method name="SetSecret"><arg name="secret" type="(oayays)" direction="in"/></method>
            <property name="Locked" type="b" access="read"/>
            <property name="Attributes" type="a{ss}" access="readwrite"/>
            <property name="Label" type="s" access="readwrite"/>
            <property name="Type" type="s" access="read"/>
            <property name="Created" type="t" access="read"/>
            <property name="Modified" type="t" access="read"/>
          </interface>
          <interface name="org.freedesktop.Secret.Session">
            <method name="Close"/>
          </interface>
          <interface name="org.freedesktop.Secret.Prompt">
            <method name="Prompt"><arg name="window-id" type="s" direction="in"/></method>
            <method name="Dismiss"/>
            <signal name="Completed"><arg name="dismissed" type="b"/><arg name="result" type="v"/></signal>
          </interface>
        </node>
        """
}
