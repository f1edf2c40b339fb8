package native

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/godbus/dbus/v5"

	"github.com/grantwire/grantwire/hostabi"
)

// The Secret Service on the session bus, and gnome-keyring's interface that unlocks a
// collection with its password without a prompt (a headless machine has no prompter: the
// Secret Service's own Unlock asks a graphical prompt to collect the password).
const (
	secretsDest   = "org.freedesktop.secrets"
	secretsPath   = dbus.ObjectPath("/org/freedesktop/secrets")
	secretService = "org.freedesktop.Secret.Service"
	gnomeInternal = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"
)

// UnlockFix is the command that unlocks a locked keyring collection (`grantwire keyring
// unlock`, which calls UnlockDefaultCollection): gnome-keyring-daemon --unlock starts a
// daemon of its own instead of unlocking the running one.
const UnlockFix = "grantwire keyring unlock"

// secret is the Secret Service's Secret struct (oayays).
type secret struct {
	Session     dbus.ObjectPath
	Parameters  []byte
	Value       []byte
	ContentType string
}

// UnlockDefaultCollection unlocks the Secret Service's default collection (the login
// keyring) with its password, on the session bus of getenv's DBUS_SESSION_BUS_ADDRESS
// (nil: the process's environment). It returns the collection's path. A collection already
// unlocked stays so; a wrong password leaves it locked and says so. It needs
// gnome-keyring (the interface that takes a password without a prompt); other Secret
// Services are unlocked in their own window.
func UnlockDefaultCollection(ctx context.Context, getenv func(string) string, password string) (string, error) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return "", insecureStore("grantwire keyring unlock is for a Secret Service (Linux, BSD)", unlockFix(), nil)
	}
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	k := &keyringStore{getenv: getenv}
	if err := k.preflight(); err != nil {
		return "", err
	}
	var conn *dbus.Conn
	var err error
	if addr := getenv("DBUS_SESSION_BUS_ADDRESS"); addr != "" {
		conn, err = dbus.Connect(addr, dbus.WithContext(ctx))
	} else {
		conn, err = dbus.ConnectSessionBus(dbus.WithContext(ctx))
	}
	if err != nil {
		return "", classify("unlock", err)
	}
	defer conn.Close()
	svc := conn.Object(secretsDest, secretsPath)
	var coll dbus.ObjectPath
	if err := svc.CallWithContext(ctx, secretService+".ReadAlias", 0, "default").Store(&coll); err != nil {
		return "", classify("unlock", err)
	}
	if coll == "/" || coll == "" {
		return "", insecureStore("the Secret Service has no default collection to unlock", installFix(), nil)
	}
	if locked, err := isLocked(ctx, conn, coll); err == nil && !locked {
		return string(coll), nil
	}
	var out dbus.Variant
	var session dbus.ObjectPath
	if err := svc.CallWithContext(ctx, secretService+".OpenSession", 0, "plain", dbus.MakeVariant("")).Store(&out, &session); err != nil {
		return "", classify("unlock", err)
	}
	defer conn.Object(secretsDest, session).CallWithContext(context.WithoutCancel(ctx), "org.freedesktop.Secret.Session.Close", 0)
	call := svc.CallWithContext(ctx, gnomeInternal+".UnlockWithMasterPassword", 0, coll,
		secret{Session: session, Parameters: []byte{}, Value: []byte(password), ContentType: "text/plain"})
	var dbusErr dbus.Error
	if errors.As(call.Err, &dbusErr) && dbusErr.Name == "org.freedesktop.DBus.Error.UnknownMethod" {
		return "", insecureStore("this Secret Service is not gnome-keyring: unlock "+string(coll)+" in its own window", "", nil)
	}
	locked, err := isLocked(ctx, conn, coll)
	switch {
	case err != nil:
		return "", classify("unlock", err)
	case locked:
		return "", &hostabi.HostError{Code: hostabi.HostErrInsecureStore,
			Detail: fmt.Sprintf("the password did not unlock %s; it is still locked", coll), Fix: UnlockFix}
	}
	return string(coll), nil
}

func isLocked(ctx context.Context, conn *dbus.Conn, coll dbus.ObjectPath) (bool, error) {
	var v dbus.Variant
	err := conn.Object(secretsDest, coll).CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0,
		"org.freedesktop.Secret.Collection", "Locked").Store(&v)
	if err != nil {
		return false, err
	}
	locked, ok := v.Value().(bool)
	if !ok {
		return false, errors.New("the collection's Locked property is not a boolean")
	}
	return locked, nil
}
