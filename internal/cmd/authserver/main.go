// Command authserver runs the test worlds' one OAuth 2.0 authorization server (package
// internal/testworld/authserver) for the demo and manual tests: automatic consent, PKCE
// S256, refresh-token rotation with reuse detection, userinfo, and the device authorization
// grant (RFC 8628: the user approves a code on the verification page, /device).
//
// It prints one JSON line with its endpoints, then serves until interrupted:
//
//	{"issuer":"http://127.0.0.1:PORT","authorization_url":".../authorize","token_url":".../token","userinfo_url":".../userinfo","device_authorization_url":".../devicecode"}
//
// With -worlds it serves the control API instead (authserver.Worlds: a world per corpus
// scenario, for the corpus runners of foreign shells) and prints
//
//	{"url":"http://127.0.0.1:PORT","worlds":"http://127.0.0.1:PORT/worlds"}
//
// It imports internal/testworld/authserver and the standard library only.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on")
	clientID := flag.String("client-id", "", "the only client id accepted (empty: any)")
	clientSecret := flag.String("client-secret", "", "client secret required on token requests (empty: none)")
	account := flag.String("account", "user@example.com", "email the userinfo endpoint returns")
	scopes := flag.String("granted-scopes", "", "space-separated scopes consent grants (empty: as requested)")
	deny := flag.Bool("deny", false, "answer every authorization with error=access_denied")
	expiresIn := flag.Int64("expires-in", 3600, "access token lifetime in seconds")
	noRotation := flag.Bool("no-rotation", false, "keep refresh tokens valid across refreshes")
	tokenPrefix := flag.String("token-prefix", "gw", "the start of every issued token (a demo greps its output for it)")
	deviceInterval := flag.Int64("device-interval", 5, "seconds a client waits between polls with a device code")
	deviceExpiresIn := flag.Int64("device-expires-in", 900, "device code lifetime in seconds")
	worlds := flag.Bool("worlds", false, "serve the control API of corpus worlds (for foreign shells' corpus runners) instead")
	flag.Parse()
	if *worlds {
		serveWorlds(*addr)
		return
	}

	cfg := authserver.Config{ClientID: *clientID, ClientSecret: *clientSecret, Account: *account,
		Deny: *deny, ExpiresIn: *expiresIn, NoRotation: *noRotation, TokenPrefix: *tokenPrefix,
		DeviceInterval: *deviceInterval, DeviceExpiresIn: *deviceExpiresIn}
	if *scopes != "" {
		cfg.GrantedScopes = strings.Fields(*scopes)
	}
	s, err := authserver.Start(cfg, *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The server names itself in every authorization response (RFC 9207), as the
	// providers whose catalog entries declare an issuer do.
	s.Configure(func(c *authserver.Config) { c.Issuer = s.URL() })
	line, _ := json.Marshal(map[string]string{
		"issuer": s.URL(), "authorization_url": s.AuthorizationURL(),
		"token_url": s.TokenURL(), "userinfo_url": s.UserinfoURL(),
		"device_authorization_url": s.DeviceAuthorizationURL(),
	})
	fmt.Println(string(line))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	_ = s.Close()
	st := s.Stats()
	fmt.Fprintf(os.Stderr, "authserver: %d authorizations, %d code exchanges, %d refreshes, %d reuses detected, %d invalid_grant, %d device codes, %d device exchanges\n",
		st.Authorizations, st.CodeExchanges, st.Refreshes, st.ReuseDetected, st.InvalidGrants, st.DeviceCodes, st.DeviceExchanges)
}

// serveWorlds serves the control API on a loopback address until interrupted.
func serveWorlds(addr string) {
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintln(os.Stderr, "authserver: -addr must be a loopback address, such as 127.0.0.1:0")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "authserver:", err)
		os.Exit(1)
	}
	base := "http://" + ln.Addr().String()
	line, _ := json.Marshal(map[string]string{"url": base, "worlds": base + "/worlds"})
	fmt.Println(string(line))
	srv := &http.Server{Handler: authserver.NewWorlds(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "authserver:", err)
		os.Exit(1)
	}
}
