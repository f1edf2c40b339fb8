package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/internal/oprun"
)

func (a *app) configureCmd() *cobra.Command {
	var fl configureFlags
	var in grantwire.ConfigureInput
	var view configureView
	return a.command(spec{
		use:   "configure <connector>",
		short: "Store an OAuth provider's client, or an MCP server's environment, in the credential store",
		long: `OAuth providers: store the OAuth client the provider issued you (its client id, and the
client secret when it has one) in the OS credential store. A connection made under another
client stops working (the client-hash tripwire) and must be made again.

MCP servers: store the values of the environment keys the server takes (grantwire catalog
<connector> lists them). The configuration is replaced as a whole: keys not given again
are deleted.

Secrets never come from arguments. A client secret comes from stdin (--client-secret-stdin;
typed without echo on a terminal) or a file (--client-secret-file). MCP values come from
KEY=VALUE lines on stdin (--from-stdin; on a terminal grantwire asks for each key, secret
ones without echo) or in a file (--from-file); --set KEY=VALUE takes only keys the catalog
does not mark secret.`,
		example: `  # OAuth client of a Desktop app registration
  grantwire configure google --client-id 123.apps.googleusercontent.com --client-secret-file ~/.config/google-secret
  pass show google/oauth-secret | grantwire configure google --client-id 123.apps.googleusercontent.com --client-secret-stdin
  grantwire configure microsoft_work --client-id 0b1c... --tenant contoso.onmicrosoft.com

  # MCP servers
  grantwire configure mcp-github --from-stdin        # asks for GITHUB_PERSONAL_ACCESS_TOKEN
  printf 'BRAVE_API_KEY=%s\n' "$BRAVE_API_KEY" | grantwire configure mcp-brave-search --from-stdin
  grantwire configure mcp-slack --set SLACK_TEAM_ID=T0123 --from-file ~/.config/slack.env
  grantwire configure mcp-memory --set MEMORY_FILE_PATH=$HOME/memory.jsonl`,
		args: exactArgs(1),
		run: operation[*grantwire.ConfigureResult]{
			parse: func(cmd *cobra.Command, args []string) error {
				id := args[0]
				cat, err := a.Catalog()
				if err != nil {
					return err
				}
				fields, err := a.setupFields(cmd.Context(), cat, id)
				if err != nil {
					return err
				}
				e, _ := cat.Entry(id)
				in, view, err = a.configureInput(id, e, fields, fl)
				return err
			},
			call: func(ctx context.Context, c *grantwire.Client, args []string) (*grantwire.ConfigureResult, error) {
				return c.Configure(ctx, args[0], in)
			},
			json: func(res *grantwire.ConfigureResult, _ []string) any { return view.json(res) },
			render: func(res *grantwire.ConfigureResult, _ []string) error {
				view.text(res)
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			f := cmd.Flags()
			f.StringVar(&fl.clientID, "client-id", "", "OAuth: the client id")
			f.BoolVar(&fl.secretStdin, "client-secret-stdin", false, "OAuth: read the client secret from stdin (without echo on a terminal)")
			f.StringVar(&fl.secretFile, "client-secret-file", "", "OAuth: read the client secret from this file")
			f.StringVar(&fl.tenant, "tenant", "", "OAuth: the tenant (Microsoft work or school: a tenant id or domain)")
			f.StringArrayVar(&fl.sets, "set", nil, "MCP: KEY=VALUE for a key the catalog does not mark secret (repeatable)")
			f.BoolVar(&fl.fromStdin, "from-stdin", false, "MCP: read KEY=VALUE lines from stdin (on a terminal: ask for each key)")
			f.StringVar(&fl.fromFile, "from-file", "", "MCP: read KEY=VALUE lines from this file")
			refuseSecret(f, "client-secret", "pipe it to --client-secret-stdin or use --client-secret-file")
		},
	})
}

// configureView is how configure prints its result: the document of --json (nil: none)
// and the text.
type configureView struct {
	json func(*grantwire.ConfigureResult) any
	text func(*grantwire.ConfigureResult)
}

// configureFlags are configure's flags.
type configureFlags struct {
	clientID, tenant, secretFile, fromFile string
	secretStdin, fromStdin                 bool
	sets                                   []string
}

// setupFields asks the policy what connector id takes (configure's form: its setup
// fields, as REST and the page show them; it stores nothing): an OAuth client (client_id,
// client_secret, tenant) or environment keys. The engine answers alone for a connector of
// the catalog, so that the flags are checked before the shell, the store and the client
// are built; when the policy asks the host (a connector the catalog does not have: it
// reads the remote servers added to the home), the client answers. An unknown connector
// is the policy's error.
func (a *app) setupFields(ctx context.Context, cat *catalog.Catalog, id string) (map[string]bool, error) {
	eng, err := a.Engine(ctx)
	if err != nil {
		return nil, err
	}
	var form struct {
		SetupFields []struct {
			Key string `json:"key"`
		} `json:"setup_fields"`
	}
	args := map[string]any{"connector": id, "form": true}
	err = oprun.RunHostless(ctx, eng, cat, "configure", args, &form)
	if errors.Is(err, oprun.ErrNeedsHost) {
		var c *grantwire.Client
		if c, err = a.Client(ctx); err != nil {
			return nil, err
		}
		_, err = oprun.Of(c).Run(ctx, "configure", args, nil, &form)
	}
	if err != nil {
		return nil, err
	}
	fields := map[string]bool{}
	for _, f := range form.SetupFields {
		fields[f.Key] = true
	}
	return fields, nil
}

// configureInput is configure's parse step: what the flags (and the secret they point at)
// give the configure operation of the connector id (catalog entry e, setup fields
// fields), and how its result is printed. The policy's fields say which flags apply: an
// OAuth client's when they hold client_id, else an environment's.
func (a *app) configureInput(id string, e catalog.Entry, fields map[string]bool, fl configureFlags) (grantwire.ConfigureInput, configureView, error) {
	var in grantwire.ConfigureInput
	var none configureView
	clientFlags := fl.clientID != "" || fl.secretStdin || fl.secretFile != "" || fl.tenant != ""
	mcpFlags := len(fl.sets) > 0 || fl.fromStdin || fl.fromFile != ""
	switch {
	case fields["client_id"]:
		switch {
		case mcpFlags:
			return in, none, usagef("%s is an OAuth provider: configure its client with --client-id (--set, --from-stdin and --from-file are for MCP servers)", id)
		case fl.clientID == "":
			return in, none, usagef("configure %s needs --client-id (and its secret from --client-secret-stdin or --client-secret-file)", id)
		case fl.secretStdin && fl.secretFile != "":
			return in, none, usagef("give the client secret once: --client-secret-stdin or --client-secret-file")
		case fl.tenant != "" && !fields["tenant"]:
			return in, none, usagef("%s has no tenant; --tenant is for providers such as microsoft_work", id)
		}
		in = grantwire.ConfigureInput{ClientID: fl.clientID, Tenant: fl.tenant}
		if fl.secretStdin || fl.secretFile != "" {
			var err error
			if in.ClientSecret, err = a.secretLine(fl.secretFile, "client secret for "+id); err != nil {
				return in, none, err
			}
		}
		return in, configureView{
			json: func(res *grantwire.ConfigureResult) any {
				return struct {
					Connector    string `json:"connector"`
					ClientIDHash string `json:"client_id_hash"`
					HasSecret    bool   `json:"has_secret"`
					Tenant       string `json:"tenant"`
				}{Connector: res.Connector, ClientIDHash: res.ClientIDHash, HasSecret: res.HasSecret, Tenant: res.Tenant}
			},
			text: func(res *grantwire.ConfigureResult) {
				what := "client id"
				if in.ClientSecret != "" {
					what = "client id and secret"
				}
				a.printf("Stored the %s OAuth %s in the credential store (client id hash %s).\n", id, what, res.ClientIDHash)
				a.printf("Next: grantwire connect %s --scopes %s\n", id, strings.Join(e.DefaultScopes, ","))
			},
		}, nil
	case clientFlags && len(fields) == 0:
		// A connector that takes nothing here (a remote MCP server): the policy refuses
		// the client given, with its code (nothing is printed).
		return grantwire.ConfigureInput{ClientID: fl.clientID, Tenant: fl.tenant}, configureView{
			json: func(*grantwire.ConfigureResult) any { return nil },
			text: func(*grantwire.ConfigureResult) {},
		}, nil
	default:
		switch {
		case clientFlags:
			return in, none, usagef("%s is an MCP server: give its environment with --from-stdin, --from-file or --set KEY=VALUE (--client-id, --client-secret-* and --tenant are for OAuth providers)", id)
		case fl.fromStdin && fl.fromFile != "":
			return in, none, usagef("give the values once: --from-stdin or --from-file")
		}
		values, given, err := a.mcpValues(e, fl.sets, fl.fromStdin, fl.fromFile)
		if err != nil {
			return in, none, err
		}
		keys := append([]string{}, slices.Sorted(maps.Keys(values))...) // [] in --json when it takes none
		return grantwire.ConfigureInput{Env: values, Given: given}, configureView{
			json: func(*grantwire.ConfigureResult) any { return map[string]any{"connector": id, "env_keys": keys} },
			text: func(*grantwire.ConfigureResult) {
				if len(keys) == 0 {
					a.printf("Configured %s (it takes no keys).\n", id)
				} else {
					a.printf("Configured %s: %s stored in the credential store.\n", id, strings.Join(keys, ", "))
				}
				a.printf("Next: grantwire activations activate %s <agent> --scopes use\n", id)
			},
		}, nil
	}
}

// mcpValues gathers an MCP server's environment values from --set, stdin and a file; given
// holds those of --set (a fix repeats them).
func (a *app) mcpValues(e catalog.Entry, sets []string, fromStdin bool, fromFile string) (values, given map[string]string, err error) {
	values = map[string]string{}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, nil, usagef("--set needs KEY=VALUE (got an argument without \"=\")")
		}
		if spec, ok := e.EnvKey(k); ok && spec.Secret {
			return nil, nil, usagef("%s is a secret: it is never taken from arguments (shell history, process list); give it on stdin: grantwire configure %s --from-stdin", k, e.ID)
		}
		if _, dup := values[k]; dup {
			return nil, nil, usagef("--set %s is given twice", k)
		}
		values[k] = v
	}
	given = maps.Clone(values)
	var read map[string]string
	var known []string
	for _, k := range e.Env {
		known = append(known, k.Key)
	}
	switch {
	case fromFile != "":
		b, err := a.readSecretFile(fromFile)
		if err != nil {
			return nil, nil, err
		}
		if read, _, err = parseKeyValues(b, fromFile, known, e.ID); err != nil {
			return nil, nil, err
		}
	case fromStdin && a.StdinTTY && a.ReadPassword != nil:
		if read, err = a.askMCPValues(e, values); err != nil {
			return nil, nil, err
		}
	case fromStdin:
		b, err := readAllLimited(a.Stdin, "stdin")
		if err != nil {
			return nil, nil, err
		}
		if read, _, err = parseKeyValues(b, "stdin", known, e.ID); err != nil {
			return nil, nil, err
		}
	}
	for k, v := range read {
		if _, dup := values[k]; dup {
			return nil, nil, usagef("%s is given both with --set and on stdin or in the file", k)
		}
		values[k] = v
	}
	return values, given, nil
}

// askMCPValues asks on the terminal for each key not given yet: required keys first,
// secret ones without echo; an empty answer skips an optional key.
func (a *app) askMCPValues(e catalog.Entry, given map[string]string) (map[string]string, error) {
	keys := append([]catalog.EnvKey(nil), e.Env...)
	sort.SliceStable(keys, func(i, j int) bool { return keys[i].Required && !keys[j].Required })
	out := map[string]string{}
	r := bufio.NewReader(a.Stdin)
	for _, k := range keys {
		if _, ok := given[k.Key]; ok {
			continue
		}
		label := k.Key
		if k.Description != "" {
			label += " (" + k.Description + ")"
		}
		if !k.Required {
			label += " [optional, Enter skips]"
		}
		var v string
		var err error
		if k.Secret {
			v, err = a.promptHidden(label)
		} else {
			v, err = a.promptLine(r, label)
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", k.Key, err)
		}
		if v == "" {
			if k.Required {
				return nil, usagef("%s is required", k.Key)
			}
			continue
		}
		out[k.Key] = v
	}
	return out, nil
}
