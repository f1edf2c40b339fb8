package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/grantwire/grantwire"
)

const rootLong = `grantwire decides which AI agent may use which external connection (OAuth providers such
as Google or Microsoft, local MCP servers with API keys) with which scopes, and keeps every
secret in the OS credential store (Keychain, Credential Manager, Secret Service).

Two layers gate every credential: a grant (agent A may use connector C with scopes S) and
the connection itself. MCP tools are visible to an agent only when it holds a grant AND the
pair is activated.

Secrets are never taken from command-line arguments: client secrets, refresh tokens and API
keys come from stdin or a file, so they stay out of shell history and the process list.

Exit codes: 0 success, 1 unknown connector or agent (or a failed test or check), 2 usage,
3 configuration, 4 authorization required (not connected, not granted, missing scopes,
re-authorization), 5 store, ledger, transport, provider or bundle failure, 75 busy (retry),
130 cancelled.

Environment: GRANTWIRE_HOME (default ~/.grantwire), GRANTWIRE_CATALOG (a catalog file that
replaces the embedded one), GRANTWIRE_KEYRING_SERVICE (default grantwire.connections for ~/.grantwire, and a service of
its own, grantwire.connections.<hash of the path>, for any other home: two homes share
secrets only when told to), GRANTWIRE_ENGINE (wasm; rego in the OPA build), GRANTWIRE_BUNDLE (an OPA bundle to run on),
GRANTWIRE_DECISION_LOG (a decision log to append to), GRANTWIRE_STORE (a PostgreSQL store
postgres://… that keeps ledgers, secrets and locks instead of the home and the OS credential
store, shared by machines; its key-encryption keys in GRANTWIRE_STORE_KEY_FILE; keyring service
grantwire.connections there unless given), GRANTWIRE_STORE_HOME (the home within the store,
default "default"). Flags win over the environment.`

const rootExample = `  # See what can be connected, and what is
  grantwire catalog
  grantwire status

  # Connect Google and let the email agent read mail
  printf '%s\n' "$GOOGLE_CLIENT_SECRET" | grantwire configure google --client-id 123.apps.googleusercontent.com --client-secret-stdin
  grantwire connect google --scopes https://www.googleapis.com/auth/gmail.readonly --grant-agent builtin:email

  # Give an MCP server its API key and show its tools to the chat agent
  grantwire configure mcp-brave-search --from-stdin <<< "BRAVE_API_KEY=$BRAVE_API_KEY"
  grantwire activations activate mcp-brave-search builtin:chat

  # Share a GAIA installation
  grantwire --home ~/.gaia --keyring-service gaia.connections status`

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "grantwire",
		Short:         "Per-agent access to OAuth connections and MCP servers, secrets in the OS credential store",
		Long:          rootLong,
		Example:       rootExample,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if a.showVersion && !cmd.HasParent() {
				return nil // --version needs no setting
			}
			return a.setup()
		},
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.showVersion {
				_, err := io.WriteString(a.Stdout, versionLine())
				return err
			}
			return a.group(cmd, args)
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.home, "home", "", "grantwire's directory (default $GRANTWIRE_HOME, else ~/.grantwire)")
	pf.StringVar(&a.service, "keyring-service", "", "the OS credential store service (default $GRANTWIRE_KEYRING_SERVICE, else grantwire.connections for ~/.grantwire and grantwire.connections.<hash> for another home)")
	pf.StringVar(&a.engineName, "engine", "", "the policy engine: native (Go compiled from the policy), wasm (policy.wasm on wazero), rego (OPA's evaluator; only in the OPA build, go build -tags opa ./cmd/grantwire) or opa-server=URL (an OPA server serving grantwire's bundle) (default $GRANTWIRE_ENGINE, else "+grantwire.DefaultEngine+")")
	pf.StringVar(&a.catalogPath, "catalog", "", "a catalog file that replaces the embedded catalog (default $GRANTWIRE_CATALOG)")
	pf.StringVar(&a.bundlePath, "bundle", "", "run on this OPA bundle's policy.wasm and catalog (grantwire policy build) (default $GRANTWIRE_BUNDLE)")
	pf.StringVar(&a.decisionLogPath, "decision-log", "", "append every decision to this file in OPA's decision-log format, secrets redacted (default $GRANTWIRE_DECISION_LOG)")
	pf.StringVar(&a.storeURL, "store", "", "keep ledgers, secrets and locks in this PostgreSQL store, postgres://USER:PASSWORD@HOST:5432/DATABASE, shared by machines (default $"+envStore+"; the key-encryption key from $GRANTWIRE_STORE_KEY_FILE)")
	pf.StringVar(&a.storeHome, "store-home", "", "the home's name within the store (default $"+envStoreHome+", else default)")
	pf.BoolVar(&a.jsonOut, "json", false, "print results (and errors, on stderr) as JSON")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// A group given an unknown command and a flag ("grants add x --scopes s"): the
		// command is what is wrong, not the flag of a command that does not exist.
		if args := c.Flags().Args(); c.HasAvailableSubCommands() && len(args) > 0 {
			return unknownCommand(c, args[0])
		}
		return &usageError{err.Error()}
	})
	root.CompletionOptions.HiddenDefaultCmd = true
	setUsage(root)
	root.Flags().BoolVar(&a.showVersion, "version", false, "print the version, commit, build, policy sha256 and engine")

	root.AddCommand(
		a.catalogCmd(), a.statusCmd(), a.connectCmd(), a.configureCmd(), a.testCmd(),
		a.disconnectCmd(), a.importCmd(), a.grantsCmd(), a.activationsCmd(), a.tokenCmd(),
		a.mcpCmd(), a.agentsCmd(), a.keyringCmd(), a.versionCmd(),
	)
	for _, extra := range extraCommands {
		root.AddCommand(extra(a))
	}
	return root
}

// group is the body of a command that only groups subcommands: without one it is a usage
// error (exit 2), as GAIA's CLI does.
func (a *app) group(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return unknownCommand(cmd, args[0])
	}
	if !a.jsonOut {
		fmt.Fprint(a.Stderr, cmd.UsageString())
	}
	return usagef("%s needs a command: %s", cmd.CommandPath(), strings.Join(subcommands(cmd), ", "))
}

// unknownCommand is the usage error of a group given a command it does not have.
func unknownCommand(cmd *cobra.Command, name string) error {
	return usagef("unknown command %q for %q (one of: %s)", name, cmd.CommandPath(), strings.Join(subcommands(cmd), ", "))
}

// subcommands are the names of cmd's commands a user may call.
func subcommands(cmd *cobra.Command) []string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return names
}

// listFlag is a repeatable flag whose values may also be separated by spaces or commas
// ("--scopes a,b --scopes c" is [a b c]). OAuth scopes never contain spaces (RFC 6749
// §3.3), and no provider of the catalog uses commas in scope names.
type listFlag struct {
	values *[]string
	kind   string
}

func (f listFlag) String() string { return strings.Join(*f.values, ",") }

func (f listFlag) Set(s string) error {
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	if s == "" && (f.kind == "scopes" || f.kind == "tools") {
		return nil // --scopes '' / --tools '': none at all (as the policy's fixes write it)
	}
	if len(parts) == 0 {
		return fmt.Errorf("empty %s", f.kind)
	}
	*f.values = append(*f.values, parts...)
	return nil
}

func (f listFlag) Type() string { return f.kind }

func addList(fs *pflag.FlagSet, p *[]string, name, kind, usage string) {
	fs.Var(listFlag{values: p, kind: kind}, name, usage)
}

// refusedAnnotation marks a flag of refuseSecret: its value is where the secret goes.
const refusedAnnotation = "grantwire_refused_secret"

// refuseSecret declares a hidden flag --name that exists only to refuse a secret given as
// an argument: an operation refuses it before parsing, saying where the secret goes
// instead (the value is never echoed).
func refuseSecret(fs *pflag.FlagSet, name, instead string) {
	fs.String(name, "", "")
	_ = fs.MarkHidden(name)
	_ = fs.SetAnnotation(name, refusedAnnotation, []string{instead})
}

// refusedFlags is the refusal of the first flag of refuseSecret the command line gives.
func refusedFlags(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if instead, ok := f.Annotations[refusedAnnotation]; ok && f.Changed && err == nil {
			err = secretRefusal(f.Name, instead[0])
		}
	})
	return err
}

func secretRefusal(name, instead string) error {
	return usagef("--%s is refused: secrets are never taken from arguments (they would stay in your shell history and the process list); %s", name, instead)
}
