package grantwire_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/grantwire/grantwire/hostabi"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
)

// The device flow through the Go API: the caller receives the code (not the shell's
// prompt), the polling runs on the world's simulated clock, and the connection is stored.
func TestConnectWithADeviceCode(t *testing.T) {
	ctx := context.Background()
	c, w := newMemClient(t)
	_, err := c.Configure(ctx, "microsoft", grantwire.ConfigureInput{ClientID: "ms-client-1"})
	require.NoError(t, err)
	w.Server.ScriptAuthorize("microsoft", authserver.Authorization{Status: "ok", Polls: []string{"authorization_pending", "slow_down"}})
	start := w.Capabilities("").Clock.Now()

	var codes []hostabi.DevicePrompt
	res, err := c.Connect(ctx, "microsoft", nil, nil, grantwire.ConnectOptions{
		Flow: grantwire.FlowDevice, OnDeviceCode: func(d hostabi.DevicePrompt) { codes = append(codes, d) },
	})
	require.NoError(t, err)
	require.Equal(t, "microsoft", res.Connector)
	require.Equal(t, []hostabi.DevicePrompt{{
		Connector: "microsoft", VerificationURI: "https://login.microsoftonline.com/device",
		VerificationURIComplete: "https://login.microsoftonline.com/device?user_code=CODE-0001",
		UserCode:                "CODE-0001", ExpiresIn: 5 * time.Minute, Interval: 5 * time.Second,
	}}, codes)
	require.Empty(t, w.Prompts(), "the caller showed the code, not the shell")
	require.Equal(t, 20*time.Second, w.Capabilities("").Clock.Now().Sub(start), "polls after 5, 5 and 10 s (slow_down)")

	// Without OnDeviceCode the shell's prompt shows it.
	w.Server.ScriptAuthorize("microsoft", authserver.Authorization{Status: "denied"})
	_, err = c.Connect(ctx, "microsoft", res.Scopes, nil, grantwire.ConnectOptions{Flow: grantwire.FlowDevice, Timeout: time.Minute})
	require.True(t, errors.Is(err, grantwire.ErrConsentDenied), "%v", err)
	require.Len(t, w.Prompts(), 1)
	require.Equal(t, time.Minute, w.Prompts()[0].ExpiresIn)

	// A provider without device authorization in the catalog is refused before any request.
	_, err = c.Configure(ctx, "gitlab", grantwire.ConfigureInput{ClientID: "gl-client"})
	require.NoError(t, err)
	_, err = c.Connect(ctx, "gitlab", nil, nil, grantwire.ConnectOptions{Flow: grantwire.FlowDevice})
	var ge *grantwire.Error
	require.True(t, errors.As(err, &ge), "%v", err)
	require.Equal(t, "CONFIGURATION", ge.Code)
	require.Equal(t, "grantwire connect gitlab --scopes email,openid,read_user --no-browser", ge.Fix)
}

// Connecting on another device: the user enters the code shown at the verification URI
// while grantwire polls the provider (RFC 8628). A web server passes OnDeviceCode and
// returns the code to the page that asked, while Connect polls on.
func ExampleClient_Connect_device() {
	ctx := context.Background()
	c, _ := example()
	_, err := c.Configure(ctx, "microsoft", grantwire.ConfigureInput{ClientID: "ms-client-1"})
	must(err)
	res, err := c.Connect(ctx, "microsoft", nil, nil, grantwire.ConnectOptions{
		Flow: grantwire.FlowDevice,
		OnDeviceCode: func(d hostabi.DevicePrompt) {
			fmt.Printf("open %s and enter %s (%s left)\n", d.VerificationURI, d.UserCode, d.ExpiresIn)
		},
	})
	must(err)
	fmt.Println(res.Connector, res.Account, res.Scopes)
	// Output:
	// open https://login.microsoftonline.com/device and enter CODE-0001 (5m0s left)
	// microsoft user@example.com [https://graph.microsoft.com/User.Read offline_access openid]
}

// BenchmarkDeviceConnect: a whole connect through the device flow on the in-memory world
// (the Wasm engine, the simulated clock), by the number of polls: every poll is one more
// question whose facts hold every poll so far. 300 is the most a window allows (the
// authorization then times out).
func BenchmarkDeviceConnect(b *testing.B) {
	b.Run("loopback", func(b *testing.B) { // for comparison: the browser flow
		ctx := context.Background()
		c, w := newBenchClient(b)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			w.Server.ScriptAuthorize("microsoft", authserver.Authorization{Status: "ok"})
			if _, err := c.Connect(ctx, "microsoft", []string{"openid", "offline_access"}, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, polls := range []int{1, 10, 100, 300} {
		b.Run(fmt.Sprintf("polls=%d", polls), func(b *testing.B) {
			ctx := context.Background()
			c, w := newBenchClient(b)
			pending := make([]string, polls-1)
			for i := range pending {
				pending[i] = "authorization_pending"
			}
			answer := authserver.Authorization{Status: "ok", Polls: pending, Device: &authserver.DeviceAnswer{Interval: 1, ExpiresIn: 1800}}
			if polls == 300 {
				answer.Status = "timeout"
			}
			opts := grantwire.ConnectOptions{Flow: grantwire.FlowDevice, Timeout: 30 * time.Minute, OnDeviceCode: func(hostabi.DevicePrompt) {}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				w.Server.ScriptAuthorize("microsoft", answer)
				_, err := c.Connect(ctx, "microsoft", []string{"openid", "offline_access"}, nil, opts)
				if polls == 300 {
					if !errors.Is(err, grantwire.ErrAuthorizationTimeout) {
						b.Fatalf("want a timeout after 300 polls, got %v", err)
					}
				} else if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// newBenchClient is a client on an in-memory world with Microsoft's client configured.
func newBenchClient(b *testing.B) (*grantwire.Client, *memhost.World) {
	ctx := context.Background()
	w := memhost.New(time.Unix(1_790_000_000, 0), 7)
	memshell.Serve(w, catalog.Default())
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(w.Capabilities("")))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(ctx) })
	if _, err := c.Configure(ctx, "microsoft", grantwire.ConfigureInput{ClientID: "ms-client-1"}); err != nil {
		b.Fatal(err)
	}
	return c, w
}
