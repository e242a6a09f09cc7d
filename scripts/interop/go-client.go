// A Secret Service client in Go on godbus (Debian's golang-dbus-dev), which talks D-Bus
// itself, written the way go-keyring (github.com/zalando/go-keyring) talks to the service:
// a plain session, the default collection by its alias, secrets sent with the content type
// "text/plain; charset=utf8", replace on store. Used by ClientInteropTests.
//
//	go-client store LABEL NAME VALUE...   (the secret on stdin)
//	go-client lookup NAME VALUE...        (prints the secret and its content type)
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/godbus/dbus"
)

const (
	service           = "org.freedesktop.secrets"
	servicePath       = "/org/freedesktop/secrets"
	defaultCollection = "/org/freedesktop/secrets/aliases/default"
	contentType       = "text/plain; charset=utf8"
)

type secret struct {
	Session     dbus.ObjectPath
	Parameters  []byte
	Value       []byte
	ContentType string
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "go-client: "+format+"\n", args...)
	os.Exit(1)
}

func attributes(pairs []string) map[string]string {
	if len(pairs)%2 != 0 {
		fail("attributes come in name value pairs")
	}
	result := map[string]string{}
	for i := 0; i < len(pairs); i += 2 {
		result[pairs[i]] = pairs[i+1]
	}
	return result
}

func main() {
	if len(os.Args) < 3 {
		fail("usage: go-client store LABEL NAME VALUE... | lookup NAME VALUE...")
	}
	conn, err := dbus.SessionBus()
	if err != nil {
		fail("no session bus: %v", err)
	}
	serviceObject := conn.Object(service, servicePath)
	var output dbus.Variant
	var session dbus.ObjectPath
	if err := serviceObject.Call("org.freedesktop.Secret.Service.OpenSession", 0, "plain", dbus.MakeVariant("")).Store(&output, &session); err != nil {
		fail("OpenSession: %v", err)
	}
	collection := conn.Object(service, defaultCollection)
	switch os.Args[1] {
	case "store":
		value, err := io.ReadAll(os.Stdin)
		if err != nil {
			fail("reading the secret: %v", err)
		}
		properties := map[string]dbus.Variant{
			"org.freedesktop.Secret.Item.Label":      dbus.MakeVariant(os.Args[2]),
			"org.freedesktop.Secret.Item.Attributes": dbus.MakeVariant(attributes(os.Args[3:])),
		}
		var item, prompt dbus.ObjectPath
		call := collection.Call("org.freedesktop.Secret.Collection.CreateItem", 0, properties,
			secret{Session: session, Parameters: []byte{}, Value: value, ContentType: contentType}, true)
		if err := call.Store(&item, &prompt); err != nil {
			fail("CreateItem: %v", err)
		}
		if prompt != "/" {
			fail("CreateItem asked for a prompt (the keyring is locked)")
		}
	case "lookup":
		var items []dbus.ObjectPath
		if err := collection.Call("org.freedesktop.Secret.Collection.SearchItems", 0, attributes(os.Args[2:])).Store(&items); err != nil {
			fail("SearchItems: %v", err)
		}
		if len(items) == 0 {
			fail("no item")
		}
		var found secret
		if err := conn.Object(service, items[0]).Call("org.freedesktop.Secret.Item.GetSecret", 0, session).Store(&found); err != nil {
			fail("GetSecret: %v", err)
		}
		fmt.Printf("%s\n%s\n", found.Value, found.ContentType)
	default:
		fail("unknown command %q", os.Args[1])
	}
}
