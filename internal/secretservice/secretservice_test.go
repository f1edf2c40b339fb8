package secretservice_test

import (
	"errors"
	"fmt"
	"testing"

	dbus "github.com/godbus/dbus/v5"

	"github.com/grantwire/grantwire/internal/secretservice"
)

func TestVanished(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{dbus.Error{Name: "org.freedesktop.DBus.Error.UnknownObject"}, true},
		{fmt.Errorf("read: %w", dbus.Error{Name: "org.freedesktop.Secret.Error.NoSuchObject"}), true},
		{dbus.Error{Name: "org.freedesktop.DBus.Error.UnknownInterface"}, true},
		{dbus.Error{Name: "org.freedesktop.DBus.Error.UnknownMethod"}, true},
		{dbus.Error{Name: "org.freedesktop.Secret.Error.IsLocked"}, false},
		{errors.New("org.freedesktop.DBus.Error.UnknownObject"), false},
		{nil, false},
	} {
		if got := secretservice.Vanished(tc.err); got != tc.want {
			t.Errorf("Vanished(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
