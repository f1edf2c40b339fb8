package main

import (
	"context"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/jsonx"
	"github.com/grantwire/grantwire/mcp"
	"github.com/grantwire/grantwire/surfaces/mcpremote"
)

// The mcp commands: mcp list; remote MCP servers behind OAuth 2.1
// (docs/behaviour.md#remote-mcp-servers): mcp add, auth, logout, remove, proxy; mcp run and
// mcp config (local servers and MCP clients) are in mcprun.go.

func (a *app) mcpAddCmd() *cobra.Command {
	var (
		url, clientID, issuer, metadataURL, secretFile string
		grant, keyFile, assertionFile                  string
		idpEndpoint, idpClientID                       string
		secretStdin, assertionStdin                    bool
		scopes                                         []string
		server                                         mcp.RemoteServer
	)
	return a.command(spec{
		use:   "add <name> --url <https URL> [--scopes S] [--client-id X [--client-secret-stdin] [--issuer I]] [--grant G ...]",
		short: "Record a remote MCP server (streamable HTTP, OAuth 2.1) under a name",
		long: `Record a remote MCP server: its streamable-HTTP endpoint (https; plain http only to a loopback
address (127.0.0.1, ::1 or localhost)) under a name of your choice (1 to 64 of a-z 0-9 _ . -;
not a catalog connector). Nothing is sent to the server yet: grantwire mcp auth <name>
discovers its authorization server and authorizes it.

Most servers need nothing else (grantwire registers itself dynamically, or names itself with
a client ID metadata document). An authorization server that takes neither needs a client
registered there by hand: give its --client-id, its secret on stdin or in a file, and
--issuer, the authorization server it is registered at. --scopes are asked for when the
server names none. --client-metadata-url is an https URL where a client ID metadata
document describing grantwire is published, used where the authorization server supports
them. Changing the URL of a server deletes the tokens it held.

Machine grants (no person, no browser; mcp auth and mcp proxy, with every token it
fetches, then run unattended) need the client registered at the authorization server (--client-id,
--issuer) and --grant:
  client-credentials  the client's own credentials (OAuth client credentials, SEP-1046):
                      its secret (--client-secret-stdin or --client-secret-file) or its
                      private key (--private-key-file, PEM: EC P-256/P-384/P-521 or RSA),
                      with which grantwire signs a client assertion (private_key_jwt)
  jwt-bearer          a workload's JWT as the grant (RFC 7523, SEP-1933: workload identity
                      federation), on --assertion-stdin or --assertion-file; the client
                      authenticates with a secret or key when it has one
  id-jag              an identity provider's ID token (--assertion-stdin or
                      --assertion-file) exchanged at --idp-token-endpoint (RFC 8693, as
                      --idp-client-id when given) for an identity assertion grant, then
                      sent as a jwt-bearer grant (enterprise-managed authorization, SEP-990)
Secrets, keys and assertions go to the credential store only; they are never taken from
arguments, written to files or printed.`,
		example: `  grantwire mcp add notes --url https://mcp.example.com/mcp
  grantwire mcp add tracker --url https://tracker.example.com/mcp --scopes read,write
  printf '%s\n' "$SECRET" | grantwire mcp add corp --url https://mcp.corp.example/mcp --client-id grantwire-cli --issuer https://login.corp.example --client-secret-stdin

  # machine grants
  printf '%s\n' "$SECRET" | grantwire mcp add builds --url https://ci.example.com/mcp --grant client-credentials --client-id ci-bot --issuer https://login.example.com --client-secret-stdin
  grantwire mcp add builds --url https://ci.example.com/mcp --grant client-credentials --client-id ci-bot --issuer https://login.example.com --private-key-file ~/.config/ci-bot.pem
  grantwire mcp add deploy --url https://deploy.example.com/mcp --grant jwt-bearer --client-id deployer --issuer https://login.example.com --assertion-file /var/run/secrets/tokens/mcp
  printf '%s\n' "$ID_TOKEN" | grantwire mcp add wiki --url https://wiki.corp.example/mcp --grant id-jag --client-id wiki-agent --issuer https://auth.wiki.corp.example --idp-token-endpoint https://idp.corp.example/oauth2/token --idp-client-id grantwire --assertion-stdin`,
		args: exactArgs(1),
		run: operation[*mcp.AddResult]{
			parse: func(cmd *cobra.Command, args []string) error {
				if url == "" {
					return usagef("mcp add needs --url, the server's streamable-HTTP endpoint")
				}
				if secretStdin && secretFile != "" {
					return usagef("give the client secret once: --client-secret-stdin or --client-secret-file")
				}
				if assertionStdin && assertionFile != "" {
					return usagef("give the assertion once: --assertion-stdin or --assertion-file")
				}
				if secretStdin && assertionStdin {
					return usagef("stdin holds one secret: give the client secret or the assertion in a file (--client-secret-file, --assertion-file)")
				}
				if (secretStdin || secretFile != "") && clientID == "" {
					return usagef("a client secret goes with --client-id")
				}
				g, err := mcpGrant(grant)
				if err != nil {
					return err
				}
				secret := ""
				if secretStdin || secretFile != "" {
					if secret, err = a.secretLine(secretFile, "client secret for "+args[0]); err != nil {
						return err
					}
				}
				key := ""
				if keyFile != "" {
					b, err := a.readSecretFile(keyFile)
					if err != nil {
						return err
					}
					if key = strings.TrimSpace(string(b)); !strings.HasPrefix(key, "-----BEGIN ") {
						return usagef("%s is not a PEM private key (-----BEGIN ... PRIVATE KEY-----)", keyFile)
					}
				}
				assertion := ""
				if assertionStdin || assertionFile != "" {
					if assertion, err = a.secretLine(assertionFile, "assertion for "+args[0]); err != nil {
						return err
					}
				}
				server = mcp.RemoteServer{
					ID: args[0], URL: url, Scopes: scopes, ClientID: clientID, ClientSecret: secret,
					Issuer: issuer, ClientMetadataURL: metadataURL,
					Grant: g, PrivateKey: key, Assertion: assertion, IDPTokenEndpoint: idpEndpoint, IDPClientID: idpClientID,
				}
				return nil
			},
			call: func(ctx context.Context, c *grantwire.Client, _ []string) (*mcp.AddResult, error) {
				return mcp.Of(c).AddServer(ctx, server)
			},
			render: func(res *mcp.AddResult, _ []string) error {
				a.printf("Added the remote MCP server %s (%s).\n", res.Connector, res.URL)
				if res.Grant != "" && res.Grant != mcp.GrantAuthorizationCode {
					a.printf("It is authorized with the %s grant: no browser, no person.\n", strings.ReplaceAll(string(res.Grant), "_", "-"))
				}
				if res.Reset {
					a.printf("Its URL changed: the tokens and registration of the old one were deleted.\n")
				}
				a.printf("Next: grantwire mcp auth %s\n", res.Connector)
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			f := cmd.Flags()
			f.StringVar(&url, "url", "", "the server's streamable-HTTP endpoint (https, or http to a loopback address (127.0.0.1, ::1 or localhost))")
			addList(f, &scopes, "scopes", "scopes", "scopes to ask for when the server names none (repeatable; commas or spaces separate several)")
			f.StringVar(&clientID, "client-id", "", "a client registered by hand at the authorization server")
			f.BoolVar(&secretStdin, "client-secret-stdin", false, "read that client's secret from stdin (without echo on a terminal)")
			f.StringVar(&secretFile, "client-secret-file", "", "read that client's secret from this file")
			f.StringVar(&issuer, "issuer", "", "the authorization server (issuer) the client is registered at")
			f.StringVar(&metadataURL, "client-metadata-url", "", "an https URL of a client ID metadata document describing grantwire")
			f.StringVar(&grant, "grant", "", "how the server is authorized: authorization-code (the browser; the default), or a machine grant: client-credentials, jwt-bearer, id-jag")
			f.StringVar(&keyFile, "private-key-file", "", "the client's private key (PEM), to sign client assertions (private_key_jwt) instead of sending a secret")
			f.BoolVar(&assertionStdin, "assertion-stdin", false, "read the assertion from stdin: the workload's JWT (jwt-bearer) or the identity provider's ID token (id-jag)")
			f.StringVar(&assertionFile, "assertion-file", "", "read the assertion from this file (as --assertion-stdin)")
			f.StringVar(&idpEndpoint, "idp-token-endpoint", "", "id-jag: the identity provider's token endpoint, where the ID token is exchanged (RFC 8693)")
			f.StringVar(&idpClientID, "idp-client-id", "", "id-jag: grantwire's client id at the identity provider")
			refuseSecret(f, "client-secret", "pipe it to --client-secret-stdin or use --client-secret-file")
			refuseSecret(f, "private-key", "use --private-key-file")
			refuseSecret(f, "assertion", "pipe it to --assertion-stdin or use --assertion-file")
		},
	})
}

// mcpGrant reads --grant: the policy's names with - or _ ("client-credentials").
func mcpGrant(s string) (mcp.Grant, error) {
	if s == "" {
		return "", nil
	}
	g := mcp.Grant(strings.ReplaceAll(s, "-", "_"))
	switch g {
	case mcp.GrantAuthorizationCode, mcp.GrantClientCredentials, mcp.GrantJWTBearer, mcp.GrantIDJAG:
		return g, nil
	}
	return "", usagef("--grant %q is not one of authorization-code, client-credentials, jwt-bearer, id-jag", s)
}

func (a *app) mcpAuthCmd() *cobra.Command {
	var scopes []string
	return a.command(spec{
		use:   "auth <name>",
		short: "Discover a remote MCP server's authorization server and authorize it in the browser",
		long: `Authorize a remote MCP server as the MCP authorization specification says: ask the server
for its challenge, read its protected-resource metadata (RFC 9728) and its authorization
server's metadata (RFC 8414 or OpenID), register grantwire there when needed (a
pre-registered client, a client ID metadata document, or dynamic registration), then
authorize with PKCE S256 through a one-shot listener on 127.0.0.1 and the resource
indicator (RFC 8707). The tokens go to the credential store, bound to that authorization
server. HTTPS is required everywhere (plain http only to a loopback address (127.0.0.1, ::1
or localhost)) and redirects
are never followed.

Without a browser or a person at a terminal it says so before anything is sent or
registered. --no-browser prints the URL to open in a browser on any machine and reads the
address that browser ends on, pasted on standard input (as connect --no-browser).
--scopes adds scopes to ask for.`,
		example: `  grantwire mcp auth notes
  grantwire mcp auth notes --no-browser        # print the URL, open it in a browser anywhere, paste the redirect back
  grantwire mcp auth tracker --scopes admin`,
		args: exactArgs(1),
		run: operation[*mcp.AuthResult]{
			parse: func(_ *cobra.Command, args []string) error { return a.waitFor(args[0]) },
			call: func(ctx context.Context, c *grantwire.Client, args []string) (*mcp.AuthResult, error) {
				opts := mcp.AuthOptions{Scopes: scopes, Timeout: a.timeout()}
				if a.noBrowser {
					opts.Flow = grantwire.FlowPaste // the redirect address is pasted back on stdin
				}
				defer a.progress.Stop()
				return mcp.Of(c).Authorize(ctx, args[0], opts)
			},
			render: func(res *mcp.AuthResult, _ []string) error {
				a.printf("Authorized %s at %s with %s (%s client).\n", res.Connector, res.Issuer, orNone(res.Scopes), res.Registration)
				if len(res.NotGranted) > 0 {
					a.warnf("the authorization server did not grant %s", strings.Join(res.NotGranted, " "))
				}
				machine := res.Grant != "" && res.Grant != mcp.GrantAuthorizationCode
				if machine {
					a.printf("No browser was needed: the %s grant runs again with grantwire mcp auth %s when the access token expires.\n",
						strings.ReplaceAll(string(res.Grant), "_", "-"), res.Connector)
				}
				if !res.RefreshToken && !machine {
					a.warnf("the authorization server issued no refresh token: when the access token expires, run grantwire mcp auth %s again", res.Connector)
				}
				a.printf("Next: grantwire activations activate %s <agent> --scopes use, then grantwire mcp proxy %s --agent <agent>\n", res.Connector, res.Connector)
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			a.authFlags(cmd, false)
			addList(cmd.Flags(), &scopes, "scopes", "scopes", "scopes to ask for besides the server's (repeatable; commas or spaces separate several)")
		},
	})
}

func (a *app) mcpLogoutCmd() *cobra.Command {
	return a.command(spec{
		use:   "logout <name>",
		short: "Revoke a remote MCP server's tokens at its authorization server and delete them",
		long: `Revoke the refresh token at the authorization server (RFC 7009, when it names a revocation
endpoint; best effort) and delete the server's tokens and registration from the credential
store. The server stays added, with its pre-registered client; grants and activations stay.`,
		example: `  grantwire mcp logout notes`,
		args:    exactArgs(1),
		run: operation[*mcp.LogoutResult]{
			call: func(ctx context.Context, c *grantwire.Client, args []string) (*mcp.LogoutResult, error) {
				return mcp.Of(c).Logout(ctx, args[0])
			},
			render: func(res *mcp.LogoutResult, _ []string) error {
				switch {
				case !res.HadTokens:
					a.printf("%s held no tokens; its registration (if any) was deleted.\n", res.Connector)
				case res.Revoked:
					a.printf("Logged out of %s: the refresh token was revoked at the authorization server and the tokens deleted.\n", res.Connector)
				default:
					a.printf("Logged out of %s: the tokens were deleted (the authorization server names no revocation endpoint).\n", res.Connector)
				}
				return nil
			},
		}.runE(a),
	})
}

func (a *app) mcpRemoveCmd() *cobra.Command {
	return a.command(spec{
		use:   "remove <name>",
		short: "Remove a remote MCP server: revoke, delete its tokens and registration, its grants and activations",
		long: `Remove a remote MCP server added with grantwire mcp add: revoke its refresh token at the
authorization server (RFC 7009, when it names a revocation endpoint; best effort), delete its
tokens, registration and pre-registered client from the credential store, its entry from
mcp_remote.json, and every grant and activation on it. A server of the catalog cannot be
removed: grantwire mcp logout <name> forgets its authorization.`,
		example: `  grantwire mcp remove notes`,
		args:    exactArgs(1),
		run: operation[*mcp.RemoveResult]{
			call: func(ctx context.Context, c *grantwire.Client, args []string) (*mcp.RemoveResult, error) {
				return mcp.Of(c).Remove(ctx, args[0])
			},
			render: func(res *mcp.RemoveResult, _ []string) error {
				how := "it held no tokens"
				switch {
				case res.Revoked:
					how = "its refresh token was revoked at the authorization server and its tokens deleted"
				case res.HadTokens:
					how = "its tokens were deleted (the authorization server names no revocation endpoint)"
				}
				a.printf("Removed the remote MCP server %s: %s; grants removed: %s; deactivated for: %s.\n",
					res.Connector, how, noneOr(res.RevokedGrants), noneOr(res.Deactivated))
				return nil
			},
		}.runE(a),
	})
}

func (a *app) mcpProxyCmd() *cobra.Command {
	var agent string
	return a.command(spec{
		use:   "proxy <name> --agent <agent>",
		short: "Serve a remote MCP server on stdio for an agent, with a fresh bearer token (gated)",
		long: `Serve the remote MCP server <name> on stdin/stdout (newline-delimited JSON-RPC, the MCP stdio
transport) and forward every message to its streamable-HTTP endpoint with a bearer token,
for MCP clients that start stdio servers (Claude Desktop, Cursor, ...).

Gated: the agent must hold a grant for the server AND the server must be active for it;
otherwise the proxy refuses with the command that fixes it, before anything is forwarded,
and a grant revoked meanwhile refuses the next request. Tokens come from the credential
store and are refreshed under the server's lock; a 401 brings a refresh, else one
authorization (in the browser); a 403 insufficient_scope a bounded step-up. No token is
ever printed. Messages go to stderr only.`,
		example: `  grantwire mcp proxy notes --agent builtin:chat`,
		args:    exactArgs(1),
		run: operation[struct{}]{
			parse: func(_ *cobra.Command, args []string) error {
				if agent == "" {
					return usagef("mcp proxy needs --agent, the agent the server is for")
				}
				a.waitingFor = "the " + args[0] + " authorization"
				return nil
			},
			// The proxy's output is the MCP stream itself: no result is printed.
			call: func(ctx context.Context, c *grantwire.Client, args []string) (struct{}, error) {
				in, out := a.stdio()
				return struct{}{}, mcpremote.Proxy(ctx, c, mcpremote.ProxyOptions{
					Server: args[0], Agent: agent, In: in, Out: out, Timeout: a.timeout(),
					OnError: a.reportForwarding,
				})
			},
			json: noResult[struct{}],
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			cmd.Flags().StringVar(&agent, "agent", "", "the agent the server is for (it must be granted and active)")
		},
	})
}

// reportForwarding writes an error met while forwarding on stderr as every refusal is
// written ("grantwire: message" and "fix: command"; --json: one object), while the proxy
// goes on serving (issue 20 §1.8).
func (a *app) reportForwarding(err error) {
	var ge *grantwire.Error
	if errors.As(err, &ge) {
		msg := ge.Summary
		if msg == "" {
			msg = ge.Message
		}
		a.report(ge.Code, msg, ge.Fix, ge.Fields, ge.Exit)
		return
	}
	a.report("UPSTREAM_ERROR", "forwarding to the server failed: "+err.Error(), "", nil, a.exitFor(context.Background(), "UPSTREAM_ERROR", 5))
}

// stdio is the proxy's MCP channel: the process's stdin and stdout.
func (a *app) stdio() (*readCloser, *writeCloser) {
	return &readCloser{a.Stdin}, &writeCloser{a.Stdout}
}

type readCloser struct {
	r interface{ Read([]byte) (int, error) }
}

func (r *readCloser) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r *readCloser) Close() error {
	if f, ok := r.r.(*os.File); ok && f != os.Stdin {
		return f.Close()
	}
	return nil
}

type writeCloser struct {
	w interface{ Write([]byte) (int, error) }
}

func (w *writeCloser) Write(p []byte) (int, error) { return w.w.Write(p) }
func (w *writeCloser) Close() error                { return nil }

func noneOr(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, " ")
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "no scopes"
	}
	return strings.Join(list, " ")
}

// printRemote prints the remote MCP servers of mcp list.
func (a *app) printRemote(agent string, servers []mcp.RemoteServerInfo) error {
	if len(servers) == 0 {
		return nil
	}
	if agent != "" {
		a.printf("Remote MCP servers visible to %s (granted and active):\n", agent)
	} else {
		a.printf("Remote MCP servers:\n")
	}
	rows := make([][]string, 0, len(servers))
	for _, s := range servers {
		issuer, scopes := "not authorized", "-"
		if s.Authorized && s.Issuer != nil {
			issuer, scopes = *s.Issuer, orDash(s.GrantedScopes)
			if s.AuthorizedAt != nil {
				issuer += " (" + time.UnixMilli(*s.AuthorizedAt).UTC().Format("2006-01-02") + ")"
			}
		}
		rows = append(rows, []string{s.ID, s.URL, issuer, scopes, orDash(slices.Sorted(maps.Keys(s.Grants))), orDash(s.ActiveFor)})
	}
	return a.printTable([]string{"ID", "URL", "ISSUER", "SCOPES", "GRANTED", "ACTIVE FOR"}, rows)
}

func (a *app) mcpCmd() *cobra.Command {
	return a.command(spec{
		use:   "mcp",
		short: "MCP servers for agents: local ones with keys, remote ones behind OAuth 2.1 (add, auth, proxy)",
		long: `MCP servers started on this machine with API keys in their environment (mcp_server
connectors) are configured with grantwire configure <id> --from-stdin and shown to agents with
grantwire activations activate <id> <agent>; grantwire mcp list shows them, with the names of
their keys (never the values).

Remote MCP servers (streamable HTTP behind OAuth 2.1) are added with grantwire mcp add <name>
--url <https URL>, authorized with grantwire mcp auth <name> (discovery, registration and PKCE
in the browser, tokens in the credential store), and served to a stdio MCP client for a
granted and active agent with grantwire mcp proxy <name> --agent <agent>.`,
		example: `  grantwire mcp list
  grantwire mcp list --agent builtin:chat
  grantwire mcp list --json | jq -r '.servers[].id'
  grantwire mcp add notes --url https://mcp.example.com/mcp && grantwire mcp auth notes`,
	}, a.mcpListCmd(), a.mcpAddCmd(), a.mcpAuthCmd(), a.mcpLogoutCmd(), a.mcpRemoveCmd(), a.mcpProxyCmd(), a.mcpRunCmd(), a.mcpConfigCmd())
}

// mcpListing is what mcp list shows: the local servers, then the remote ones.
type mcpListing struct {
	Remote  []mcp.RemoteServerInfo `json:"remote"`
	Servers []mcp.Server           `json:"servers"`
}

func (a *app) mcpListCmd() *cobra.Command {
	var agent string
	return a.command(spec{
		use:   "list [--agent <agent>]",
		short: "List the configured MCP servers with their keys' names, or those an agent sees",
		long: `List the MCP servers of mcp_servers.json: each with its command, the names of the
environment keys stored for it in the credential store (never their values), the agents
granted and the agents it is active for. Servers the file holds that the catalog does not
know are listed too ("in_catalog": false); grantwire does not manage them.

Remote MCP servers (grantwire mcp add) follow, with their URL, the issuer of the
authorization server they were authorized at and the scopes it granted ("remote" in --json).

With --agent, list the servers whose tools that agent sees: those it holds a grant for AND
is active for.`,
		example: `  grantwire mcp list
  grantwire mcp list --agent builtin:research
  grantwire mcp list --json | jq -r '.servers[] | select(.missing_keys) | .id'`,
		args: noArgs,
		run: operation[mcpListing]{
			call: func(ctx context.Context, c *grantwire.Client, _ []string) (l mcpListing, err error) {
				if l.Servers, err = mcpServers(ctx, c, agent); err != nil {
					return l, err
				}
				if l.Remote, err = mcp.Of(c).RemoteServers(ctx, agent); l.Remote == nil {
					l.Remote = []mcp.RemoteServerInfo{}
				}
				return l, err
			},
			render: func(l mcpListing, _ []string) error {
				if err := a.printLocal(agent, l.Servers, len(l.Remote) > 0); err != nil {
					return err
				}
				return a.printRemote(agent, l.Remote)
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			cmd.Flags().StringVar(&agent, "agent", "", "only the servers this agent sees (granted and active)")
		},
	})
}

// printLocal prints the local MCP servers of mcp list (nothing when there are none but
// remote ones).
func (a *app) printLocal(agent string, servers []mcp.Server, remote bool) error {
	if len(servers) == 0 && remote {
		return nil
	}
	if len(servers) == 0 {
		if agent != "" {
			a.printf("No MCP server is visible to %s (a server is visible when the agent holds a grant for it AND it is active for the agent).\n", agent)
		} else {
			a.printf("No MCP servers are configured. grantwire catalog --tier search lists some; grantwire configure <id> --from-stdin adds one.\n")
		}
		return nil
	}
	if agent != "" {
		a.printf("MCP servers visible to %s (granted and active):\n", agent)
	}
	rows := make([][]string, 0, len(servers))
	for _, s := range servers {
		keys := orDash(s.EnvKeys)
		switch {
		case !s.Configured:
			keys = "not configured"
		case len(s.MissingKeys) > 0:
			keys += " (missing " + strings.Join(s.MissingKeys, ",") + ")"
		}
		id := s.ID
		if !s.InCatalog {
			id += " (not in the catalog)"
		}
		command := strings.TrimSpace(s.Command + " " + strings.Join(s.Args, " "))
		rows = append(rows, []string{id, command, keys, orDash(slices.Sorted(maps.Keys(s.Grants))), orDash(s.ActiveFor)})
	}
	return a.printTable([]string{"ID", "COMMAND", "KEYS", "GRANTED", "ACTIVE FOR"}, rows)
}

// mcpServers lists the servers of mcp_servers.json, or those an agent sees (the policy's
// mcp_list), with lists as [] rather than null.
func mcpServers(ctx context.Context, c *grantwire.Client, agent string) ([]mcp.Server, error) {
	list, err := mcp.Of(c).Servers(ctx, agent)
	if err != nil {
		return nil, err
	}
	for i := range list {
		s := &list[i]
		s.Args, s.EnvKeys, s.ActiveFor = jsonx.NonNil(s.Args), jsonx.NonNil(s.EnvKeys), jsonx.NonNil(s.ActiveFor)
	}
	if list == nil {
		list = []mcp.Server{}
	}
	return list, nil
}
