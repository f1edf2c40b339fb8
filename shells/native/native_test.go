package native_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/shells/native"
)

// Two homes never share a keyring service unless it is given: ~/.grantwire uses the
// default service, every other home one derived from its path.
func TestServiceFor(t *testing.T) {
	user := t.TempDir()
	require.Equal(t, hostabi.DefaultService, native.ServiceFor(filepath.Join(user, ".grantwire"), user))
	require.Equal(t, hostabi.DefaultService, native.ServiceFor(filepath.Join(user, "x", "..", ".grantwire")+"/", user))
	a := native.ServiceFor(filepath.Join(user, "a"), user)
	b := native.ServiceFor(filepath.Join(user, "b"), user)
	require.NotEqual(t, a, b)
	require.Regexp(t, `^grantwire\.connections\.[0-9a-f]{12}$`, a)
	require.Equal(t, a, native.ServiceFor(filepath.Join(user, "a"), ""), "the same home, the same service")
	require.NotEqual(t, hostabi.DefaultService, native.ServiceFor(filepath.Join(user, ".grantwire"), ""), "without a user home nothing is the default home")

	t.Setenv("HOME", user)
	for home, want := range map[string]string{filepath.Join(user, ".grantwire"): hostabi.DefaultService, filepath.Join(user, "a"): a} {
		sh, err := native.New(native.Options{Home: home, NoWatch: true})
		require.NoError(t, err)
		require.Equal(t, want, sh.Capabilities().Service, home)
		require.NoError(t, sh.Close())
	}
	sh, err := native.New(native.Options{Home: filepath.Join(user, "a"), Service: "gaia.connections", NoWatch: true})
	require.NoError(t, err)
	require.Equal(t, "gaia.connections", sh.Capabilities().Service, "an explicit service wins")
	require.NoError(t, sh.Close())
}

func TestNewDefaults(t *testing.T) {
	home := filepath.Join(t.TempDir(), "gw")
	sh, err := native.New(native.Options{Getenv: func(k string) string {
		if k == "GRANTWIRE_HOME" {
			return home
		}
		return ""
	}, ActivationChanges: func(before, after json.RawMessage) {}})
	require.NoError(t, err)
	defer sh.Close()
	require.Equal(t, home, sh.Home())
	require.Equal(t, os.FileMode(0o700), mode(t, filepath.Join(home, "connectors")), "the watcher's directory, created 0700")
	caps := sh.Capabilities()
	require.Equal(t, native.ServiceFor(home, ""), caps.Service, "a home other than ~/.grantwire has its own service")
	require.NotNil(t, caps.Keyring)
	require.NotNil(t, caps.Files)
	require.NotNil(t, caps.Locks)
	require.NotNil(t, caps.Clock)
	require.NotNil(t, caps.Entropy)
	require.NotNil(t, caps.Events)
	require.NotNil(t, caps.Loopback)
	require.NotNil(t, caps.HTTP)
	require.Equal(t, filepath.Join(home, "connectors", "local.lock"), sh.LockPath("local"))
	b := make([]byte, 32)
	n, err := caps.Entropy.Read(b)
	require.NoError(t, err)
	require.Equal(t, 32, n)
	require.NotEqual(t, make([]byte, 32), b)

	rel, err := native.New(native.Options{Home: "relative-home", NoWatch: true, Service: "gaia.connections"})
	require.NoError(t, err)
	require.True(t, filepath.IsAbs(rel.Home()))
	require.Equal(t, "gaia.connections", rel.Capabilities().Service)
	require.NoDirExists(t, rel.Home(), "with NoWatch nothing is created before the first write")
	require.NoError(t, rel.Close())
	require.NoError(t, sh.Close(), "closing twice is harmless")
}

// The OS shell under the grantwire Client (grantwire.Open does this in one call).
func ExampleNew() {
	ctx := context.Background()
	shell, err := native.New(native.Options{
		Home:        filepath.Join(os.TempDir(), "grantwire-example"), // default: $GRANTWIRE_HOME or ~/.grantwire
		Service:     "grantwire.connections",                          // "gaia.connections" shares a GAIA installation
		Interactive: true,                                             // print the authorization URL and wait when no browser opens
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer shell.Close()
	client, err := grantwire.New(ctx, grantwire.WithCapabilities(shell.Capabilities()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close(ctx)
	_, _ = client.Grant(ctx, "mcp-github", "builtin:chat", []string{"use"})
}

// Subscribers receive every connector.* event, including activations other processes
// changed.
func ExampleBus_Subscribe() {
	bus := native.NewBus()
	events, stop := bus.Subscribe(16)
	defer stop()
	bus.Emit(hostabi.Event{Type: "connector.activation.changed",
		Payload: []byte(`{"connector_id":"mcp-github","agent_id":"builtin:chat","active":true}`)})
	e := <-events
	fmt.Println(e.Type, string(e.Payload))
	// Output: connector.activation.changed {"connector_id":"mcp-github","agent_id":"builtin:chat","active":true}
}
