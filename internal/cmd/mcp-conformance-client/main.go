// Command mcp-conformance-client is the client the official MCP conformance suite
// (@modelcontextprotocol/conformance) tests: `make mcp-conformance` runs the suite's client
// authorization scenarios with it (scripts/mcp-conformance.sh).
//
// It runs exactly what `grantwire mcp` runs — the policy's mcp_add, mcp_auth and mcp_token
// operations on the OS shell's files, locks, HTTP and loopback listener, and package
// mcpremote's OAuth handler on the MCP Go SDK's streamable-HTTP client — with two test
// stand-ins: the credential store is in memory (the suite starts one process per
// scenario), and the person at the browser is a headless user who follows the
// authorization server's redirect to the loopback. The server's URL is the last argument;
// MCP_CONFORMANCE_SCENARIO names the scenario and MCP_CONFORMANCE_CONTEXT may carry a
// pre-registered client ({"client_id", "client_secret", "issuer"}) and what a machine grant
// needs: a private key ("private_key_pem", auth/client-credentials-jwt), a workload's JWT
// ("valid_jwt", auth/wif-jwt-bearer), an identity provider's ID token and token endpoint
// ("idp_id_token", "idp_token_endpoint", "idp_client_id",
// auth/enterprise-managed-authorization). Each is added as `grantwire mcp add` adds it
// (README: Machine grants).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	gwmcp "github.com/grantwire/grantwire/mcp"
	"github.com/grantwire/grantwire/shells/native"
	"github.com/grantwire/grantwire/surfaces/mcpremote"
)

// The server's id in the client's home, the agent the connection is for, and the client
// ID metadata document URL the suite expects (auth/basic-cimd).
const (
	serverID    = "conformance"
	agent       = "builtin:chat"
	metadataURL = "https://conformance-test.local/client-metadata.json"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mcp-conformance-client <server URL>  (MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_CONTEXT)")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	if err := run(ctx, os.Args[len(os.Args)-1], os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
		fmt.Fprintf(os.Stderr, "mcp-conformance-client (%s): %v\n", os.Getenv("MCP_CONFORMANCE_SCENARIO"), err)
		os.Exit(1)
	}
}

func run(ctx context.Context, serverURL, rawContext string) error {
	var cc struct {
		ClientID         string `json:"client_id"`
		ClientSecret     string `json:"client_secret"`
		Issuer           string `json:"issuer"`
		PrivateKeyPEM    string `json:"private_key_pem"`
		ValidJWT         string `json:"valid_jwt"`
		IDPIDToken       string `json:"idp_id_token"`
		IDPTokenEndpoint string `json:"idp_token_endpoint"`
		IDPClientID      string `json:"idp_client_id"`
	}
	if rawContext != "" {
		if err := json.Unmarshal([]byte(rawContext), &cc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	home, err := os.MkdirTemp("", "grantwire-mcp-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	// The policy's loopback rule for the shell's dialer, as grantwire.Open sets it.
	eng, err := nativeengine.New(ctx)
	if err != nil {
		return err
	}
	loopback := eng.Manifest().Loopback
	_ = eng.Close(ctx)
	shell, err := native.New(native.Options{Home: home, NoWatch: true, Browser: headlessUser, Prompt: os.Stderr, Loopback: loopback})
	if err != nil {
		return err
	}
	caps := shell.Capabilities()
	caps.Keyring = memhost.New(time.Now(), 1).Capabilities(caps.Service).Keyring
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(caps))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	userClient.Store(mcpremote.HTTPClient(c))

	add := gwmcp.RemoteServer{
		ID: serverID, URL: serverURL, ClientID: cc.ClientID, ClientSecret: cc.ClientSecret, Issuer: cc.Issuer,
		ClientMetadataURL: metadataURL,
	}
	// The machine grants: what a user gives `grantwire mcp add --grant ...`.
	switch {
	case cc.IDPIDToken != "":
		add.Grant, add.Assertion = gwmcp.GrantIDJAG, cc.IDPIDToken
		add.IDPTokenEndpoint, add.IDPClientID = cc.IDPTokenEndpoint, cc.IDPClientID
	case cc.ValidJWT != "":
		add.Grant, add.Assertion = gwmcp.GrantJWTBearer, cc.ValidJWT
	case cc.PrivateKeyPEM != "":
		add.Grant, add.PrivateKey = gwmcp.GrantClientCredentials, cc.PrivateKeyPEM
	case strings.HasPrefix(os.Getenv("MCP_CONFORMANCE_SCENARIO"), "auth/client-credentials"):
		// the context is a pre-registered client's, as auth/pre-registration's: the
		// scenario is what says the client is a machine (SEP-1046)
		add.Grant = gwmcp.GrantClientCredentials
	}
	if _, err := gwmcp.Of(c).AddServer(ctx, add); err != nil {
		return fmt.Errorf("mcp add: %w", err)
	}
	if _, err := c.Activate(ctx, serverID, agent, nil); err != nil {
		return fmt.Errorf("activate: %w", err)
	}
	h := &mcpremote.Handler{Client: c, Server: serverID, Agent: agent, Timeout: 20 * time.Second}
	client := mcp.NewClient(&mcp.Implementation{Name: "grantwire-conformance", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: serverURL, HTTPClient: h.WithDPoP(mcpremote.HTTPClient(c)), OAuthHandler: h,
	}, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer session.Close()
	if _, err := session.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	if _, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "test-tool", Arguments: map[string]any{}}); err != nil {
		return fmt.Errorf("tools/call: %w", err)
	}
	return nil
}

// userClient is the browser's HTTP client (mcpremote.HTTPClient of the session's client),
// set once the client is built: the browser is opened only after that.
var userClient atomic.Pointer[http.Client]

// headlessUser is the person at the browser: the suite's authorization server answers the
// authorization request with a redirect to the loopback at once, and the user follows it.
func headlessUser(authURL string) error {
	hc := *userClient.Load()
	hc.Timeout = 10 * time.Second
	resp, err := hc.Get(authURL)
	if err != nil {
		return err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Host == "" {
		return errors.New("the authorization server did not redirect to the loopback")
	}
	go func() {
		req, err := http.NewRequest(http.MethodGet, loc.String(), nil)
		if err != nil {
			return
		}
		if r, err := hc.Do(req); err == nil {
			r.Body.Close()
		}
	}()
	return nil
}
