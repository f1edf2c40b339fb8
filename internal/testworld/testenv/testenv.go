// Package testenv holds what grantwire's tests share about their environment: whether the
// real OS credential store must be used, and a probe that fails fast when it is
// unreachable. Only tests import it.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	gokeyring "github.com/zalando/go-keyring"
)

// RealKeyringEnv is set to 1 by scripts/test.sh (make test), which starts a private,
// headless Secret Service first; then an unreachable store fails the real-keyring tests.
// Unset, they skip and say how to run them.
const RealKeyringEnv = "GRANTWIRE_REAL_KEYRING"

// RequireKeyring skips the test when RealKeyringEnv is not 1 (saying how to run it) and
// fails it when the OS credential store does not answer a set and a delete within 10 s.
// pkg names the package for the hint ("./shells/native").
func RequireKeyring(t testing.TB, pkg string) {
	t.Helper()
	if os.Getenv(RealKeyringEnv) != "1" {
		t.Skipf("real-keyring test: run it with a Secret Service: make test, or scripts/with-keyring.sh go test %s (sets %s=1)", pkg, RealKeyringEnv)
	}
	svc := "grantwire.probe." + RandHex(4)
	done := make(chan error, 1)
	go func() {
		err := gokeyring.Set(svc, "probe", "x")
		if err == nil {
			err = gokeyring.Delete(svc, "probe")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s=1 but the OS credential store is unreachable (DBUS_SESSION_BUS_ADDRESS=%q): %v", RealKeyringEnv, os.Getenv("DBUS_SESSION_BUS_ADDRESS"), err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s=1 but the OS credential store did not answer within 10 s", RealKeyringEnv)
	}
}

// RandHex returns n random bytes in hex (unique keyring service names, homes, secrets).
func RandHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("testenv: %v", err))
	}
	return hex.EncodeToString(b)
}
