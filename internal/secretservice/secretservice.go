// Package secretservice holds what grantwire knows about the freedesktop Secret Service's
// answers, for the OS shell's keyring and the OS-shell test world that reads the store
// behind it. It imports no grantwire package.
package secretservice

import (
	"errors"

	dbus "github.com/godbus/dbus/v5"
)

// Vanished reports whether err is the Secret Service answering about an item that another
// process deleted between a search and a read or delete of it: the object is unknown, or
// has no such interface or method. For the caller, the slot is empty.
func Vanished(err error) bool {
	var dbusErr dbus.Error
	if !errors.As(err, &dbusErr) {
		return false
	}
	switch dbusErr.Name {
	case "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.UnknownMethod",
		"org.freedesktop.DBus.Error.UnknownInterface", "org.freedesktop.Secret.Error.NoSuchObject":
		return true
	}
	return false
}
