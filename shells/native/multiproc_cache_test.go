package native_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/grantwire/grantwire/catalog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/shells/native"
)

// childChanger is process B: it opens its own client on the home and makes one change
// (GW_ACTION), then exits.
func childChanger() int {
	ctx := context.Background()
	sh, err := native.New(native.Options{Home: os.Getenv("GW_HOME"), Service: os.Getenv("GW_SERVICE"), NoWatch: true,
		LockDir: os.Getenv("GRANTWIRE_LOCK_DIR"), Browser: autoBrowser, Prompt: os.Stderr,
		Getenv: func(string) string { return "" }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer sh.Close()
	client, err := grantwire.New(ctx, grantwire.WithCapabilities(sh.Capabilities()), grantwire.WithCatalog(catalog.Bytes(testCatalogAt(os.Getenv("GW_SERVER")))))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer client.Close(ctx)
	switch a := os.Getenv("GW_ACTION"); a {
	case "revoke":
		_, err = client.Revoke(ctx, "local", "builtin:chat")
	case "disconnect":
		_, err = client.Disconnect(ctx, "local")
	case "configure":
		_, err = client.Configure(ctx, "local", grantwire.ConfigureInput{ClientID: "cid2", ClientSecret: "cs2"})
	case "configure-and-clear":
		// The client rotates, and this process's own token call trips the tripwire, which
		// clears the connection.
		if _, err = client.Configure(ctx, "local", grantwire.ConfigureInput{ClientID: "cid2", ClientSecret: "cs2"}); err == nil {
			_, err = client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat")
			var ge *grantwire.Error
			if errors.As(err, &ge) {
				fmt.Println(ge.Code)
				err = nil
			} else if err == nil {
				err = errors.New("the tripwire did not trip")
			}
		}
	case "forget-connection":
		// Another grantwire process deletes the stored connection alone.
		err = sh.Capabilities().Keyring.Delete(ctx, os.Getenv("GW_SERVICE"), "local:default")
	case "reconnect":
		_, err = client.Connect(ctx, "local", []string{"mail.read"}, []string{"builtin:chat"})
	default:
		err = fmt.Errorf("unknown action %q", a)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Process A holds an open client that has served its cached token without a round trip
// to the Secret Service; process B changes the world and exits; A's very next call sees
// the change.
func TestMultiProcessCacheSeesChanges(t *testing.T) {
	requireKeyring(t)
	for _, tc := range []struct {
		action string
		code   string // the error of A's next call; "" means a token
		// keyring: the change is in the keyring (A must read it from the store); the
		// others are refused by the grants ledger before the keyring is consulted.
		keyring bool
	}{
		{"revoke", "AGENT_NOT_GRANTED", false},
		{"disconnect", "AGENT_NOT_GRANTED", false}, // disconnect drops the grants too
		{"forget-connection", "NOT_CONNECTED", true},
		{"configure", "REAUTH_REQUIRED", true},
		{"configure-and-clear", "NOT_CONNECTED", true},
		{"reconnect", "", true},
	} {
		t.Run(tc.action, func(t *testing.T) {
			ctx := context.Background()
			w := connected(t, authserver.Config{ClientID: "cid", ClientSecret: "cs", ExpiresIn: 3600}, worldOpts{noWatch: true})
			get := func() (*grantwire.Token, error) {
				return w.client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat")
			}
			first, err := get()
			require.NoError(t, err)
			store := native.CountKeyringReads(w.shell)
			again, err := get()
			require.NoError(t, err)
			require.Equal(t, first.AccessToken, again.AccessToken)
			require.Zero(t, store.Load(), "the cached token was served without a round trip to the Secret Service")

			cmd := child(t, "changer", "GW_HOME="+w.home, "GW_SERVICE="+w.service, "GW_SERVER="+w.srv.URL(), "GW_ACTION="+tc.action)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "process B: %s", out)
			exited := time.Now()

			tok, err := get()
			seen := time.Since(exited)
			if tc.code == "" {
				require.NoError(t, err)
				require.NotEqual(t, first.AccessToken, tok.AccessToken, "the token of the new connection, not the cached one")
				blob, found := storedConnection(t, w.service, "local")
				require.True(t, found)
				require.True(t, w.srv.Live(blob["refresh_token"].(string)))
			} else {
				require.Nil(t, tok, "process A served a token after B's %s", tc.action)
				var ge *grantwire.Error
				require.ErrorAs(t, err, &ge)
				require.Equal(t, tc.code, ge.Code, "%v", err)
			}
			if tc.keyring {
				require.Positive(t, store.Load(), "the change was read from the store")
			}
			t.Logf("%s by process B seen by A's first call after B exited (that call took %s)", tc.action, seen.Round(time.Microsecond))
		})
	}
}
