package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/jsonx"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/shells/native"
	"github.com/grantwire/grantwire/shells/postgres"
)

// `grantwire store`: moving a home to a PostgreSQL store (shells/postgres) and back, and
// the store's key-encryption keys. Every command runs on the store with --store
// (app.Client lays it over the OS shell).

func init() { extraCommands = append(extraCommands, newStoreCmd) }

// envStore names the PostgreSQL store when --store is not given, envStoreHome the home
// within it when --store-home is not.
const (
	envStore         = "GRANTWIRE_STORE"
	envStoreHome     = "GRANTWIRE_STORE_HOME"
	defaultStoreHome = "default"
)

// storeFlags are the flags every store command shares (--store and --store-home are
// every command's).
type storeFlags struct {
	keyFile, keyEnv string
}

func (f *storeFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.keyFile, "key-file", "", "the file of the store's key-encryption keys (default $"+postgres.KeyFileEnv+")")
	fs.StringVar(&f.keyEnv, "key-env", "", "the name of an environment variable holding the keys instead of a file")
}

func (a *app) openStore(ctx context.Context, rawURL, service string, f storeFlags) (*postgres.Store, error) {
	return postgres.Open(ctx, rawURL, postgres.Options{Home: a.storeHome, Service: service, KeyFile: a.expandHome(f.keyFile),
		KeyEnv: f.keyEnv, Getenv: a.Getenv, NoWatch: true})
}

func isStoreURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

func newStoreCmd(a *app) *cobra.Command {
	return a.command(spec{
		use:   "store",
		short: "Move a home to a PostgreSQL store and back; the store's keys",
		long: `A PostgreSQL store holds what a home holds — the ledgers as rows, the secrets sealed with
AES-256-GCM under data keys wrapped by a key-encryption key that only the machines hold —
so that machines share one set of connections, grants and locks.`,
		example: `  grantwire store new-key ~/.grantwire-store.key
  export GRANTWIRE_STORE_KEY_FILE=~/.grantwire-store.key
  grantwire store copy --from ~/.grantwire --to postgres://grantwire@db.example.com/grantwire
  grantwire --keyring-service gaia.connections store copy --from ~/.gaia --to postgres://grantwire@db.example.com/grantwire --store-home gaia`,
	}, a.storeCopyCmd(), a.storeNewKeyCmd(), a.storeRotateKeyCmd(), a.storeMoveAsideCmd())
}

func (a *app) storeCopyCmd() *cobra.Command {
	var f storeFlags
	var from, to string
	var replace, serviceGiven bool
	return a.command(spec{
		use:   "copy --from HOME|URL --to URL|HOME",
		short: "Copy a home's ledgers and secrets to a PostgreSQL store, or a store's home back to a directory",
		long: `Copies every ledger of the home (byte for byte) and every secret of its keyring service, from
a home directory and the OS credential store to a PostgreSQL store, or back. Secrets pass
through this process's memory only, never a file. The keyring service is --keyring-service
(else the home's own, as for any command); the store keeps secrets under the same service.
When the destination already holds another value, nothing is copied unless --replace.`,
		example: `  grantwire store copy --from ~/.grantwire --to postgres://grantwire@db.example.com/grantwire
  grantwire store copy --from postgres://grantwire@db.example.com/grantwire --to ~/.grantwire
  grantwire --keyring-service gaia.connections store copy --from ~/.gaia --to postgres://grantwire@db.example.com/grantwire --store-home gaia`,
		args: cobra.NoArgs,
		run: operation[storeCopy]{
			parse: func(cmd *cobra.Command, _ []string) error {
				if from == "" || to == "" {
					return usagef("store copy needs --from and --to: a home directory and a postgres:// URL")
				}
				if isStoreURL(from) == isStoreURL(to) {
					return usagef("store copy copies between a home directory and a PostgreSQL store: exactly one of --from and --to is a postgres:// URL")
				}
				serviceGiven = cmd.Flags().Changed("keyring-service")
				return nil
			},
			do: func(ctx context.Context, _ []string) (storeCopy, error) {
				return a.storeCopy(ctx, from, to, serviceGiven, f, replace)
			},
			json: func(c storeCopy, _ []string) any {
				return map[string]any{"from": c.from, "to": c.to, "service": c.service,
					"ledgers": jsonx.NonNil(c.rep.Ledgers), "secrets": jsonx.NonNil(c.rep.Secrets), "unchanged": c.rep.Same}
			},
			render: func(c storeCopy, _ []string) error {
				a.printf("copied %d ledgers and %d secrets (keyring service %s) from %s to %s", len(c.rep.Ledgers), len(c.rep.Secrets), c.service, c.from, c.to)
				if c.rep.Same > 0 {
					a.printf("; %d were already there", c.rep.Same)
				}
				a.printf("\n")
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			f.add(cmd)
			cmd.Flags().StringVar(&from, "from", "", "a home directory, or a postgres:// URL")
			cmd.Flags().StringVar(&to, "to", "", "a postgres:// URL, or a home directory")
			cmd.Flags().BoolVar(&replace, "replace", false, "overwrite ledgers and secrets the destination holds with other values")
		},
	})
}

// storeCopy is what store copy did: the report of postgres.Copy between two named sides.
type storeCopy struct {
	from, to, service string
	rep               postgres.CopyReport
}

// storeCopy copies between the home directory and the store that from and to name.
func (a *app) storeCopy(ctx context.Context, from, to string, serviceGiven bool, f storeFlags, replace bool) (storeCopy, error) {
	dir, url := a.expandHome(from), to
	if isStoreURL(from) {
		dir, url = a.expandHome(to), from
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	service := a.service
	if !serviceGiven && a.Getenv(envService) == "" {
		service = native.ServiceFor(dir, a.userHome())
	}
	st, err := a.openStore(ctx, url, service, f)
	if err != nil {
		return storeCopy{}, err
	}
	defer st.Close()
	home, closeHome, err := a.homeSide(dir, service)
	if err != nil {
		return storeCopy{}, err
	}
	defer closeHome()
	src, dst := home, st.Side()
	if isStoreURL(from) {
		src, dst = st.Side(), home
	}
	rep, err := postgres.Copy(ctx, src, dst, postgres.CopyOptions{Replace: replace})
	return storeCopy{from: src.Name, to: dst.Name, service: service, rep: rep}, err
}

// homeLedgers are the ledgers a home may hold (the policy's names, docs/behaviour.md#files).
var homeLedgers = []string{layout.Grants, layout.Activations, layout.State, layout.MCPServers, layout.Agents, "mcp_remote.json"}

// homeSide is a home directory and its keyring service on the OS shell, as one end of a
// copy. Its secrets are those the layout names for every connector the catalog or the
// home's ledgers mention (docs/behaviour.md#files: keyring slots), and the MCP values its
// mcp_servers.json refers to: the OS credential store cannot be listed everywhere.
func (a *app) homeSide(dir, service string) (postgres.Side, func(), error) {
	sh, err := a.NewShell(native.Options{Home: dir, Service: service, NoWatch: true, Getenv: a.Getenv,
		Warn: func(msg string) { a.warnf("%s", msg) }})
	if err != nil {
		return postgres.Side{}, nil, fmt.Errorf("cannot open the OS shell: %w", err)
	}
	c := sh.Capabilities()
	side := postgres.Side{Name: dir, Files: c.Files, Keyring: c.Keyring, Service: service,
		Ledgers: func(context.Context) ([]string, error) { return homeLedgers, nil },
		Users: func(ctx context.Context) ([]string, error) {
			cat, err := a.Catalog()
			if err != nil {
				return nil, err
			}
			ids := map[string]bool{}
			for _, e := range cat.Entries() {
				ids[e.ID] = true
			}
			var envUsers []string
			for _, name := range homeLedgers {
				doc, _, err := c.Files.Read(ctx, name)
				if err != nil {
					var refused *hostabi.FileRefused
					if errors.As(err, &refused) {
						continue // Copy refuses it with the reason
					}
					return nil, err
				}
				mentioned(name, doc, service, ids, &envUsers)
			}
			return keyringUsers(ids, envUsers), nil
		}}
	return side, func() { _ = sh.Close() }, nil
}

// mentioned adds the connectors a ledger names to ids, and the keyring users of service
// that mcp_servers.json refers to ({"$keyring": "<service>:<user>"}) to envUsers.
func mentioned(name string, doc []byte, service string, ids map[string]bool, envUsers *[]string) {
	var root map[string]json.RawMessage
	if json.Unmarshal(doc, &root) != nil {
		return
	}
	keysOf := func(raw json.RawMessage) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(raw, &m)
		return m
	}
	switch name {
	case layout.Grants, layout.State:
		for id := range root {
			ids[id] = true
		}
	case layout.Activations:
		for id := range keysOf(root["activations"]) {
			ids[id] = true
		}
	case "mcp_remote.json":
		for id := range keysOf(root["servers"]) {
			ids[id] = true
		}
	case layout.MCPServers:
		servers := root["mcpServers"]
		if servers == nil {
			servers = root["servers"]
		}
		for id, raw := range keysOf(servers) {
			ids[id] = true
			var entry struct {
				Env map[string]struct {
					Keyring string `json:"$keyring"`
				} `json:"env"`
			}
			_ = json.Unmarshal(raw, &entry)
			for _, ref := range entry.Env {
				if user, ok := strings.CutPrefix(ref.Keyring, service+":"); ok {
					*envUsers = append(*envUsers, user)
				}
			}
		}
	}
}

// keyringUsers are the slots of the layout for every connector id (a connection, its
// access token, its OAuth client; a remote MCP server's registration, pre-registered
// client and tokens: policy/grantwire/store), plus the MCP values.
func keyringUsers(ids map[string]bool, envUsers []string) []string {
	out := append([]string(nil), envUsers...)
	for id := range ids {
		out = append(out, layout.ConnectionUser(id), layout.TokenUser(id), layout.ClientUser(id),
			id+":mcp_client", id+":mcp_preregistered", id+":mcp_token")
	}
	sort.Strings(out)
	return out
}

func (a *app) storeNewKeyCmd() *cobra.Command {
	return a.command(spec{
		use:   "new-key FILE",
		short: "Write a new key-encryption key for a PostgreSQL store to FILE (mode 0600) and print its id",
		example: `  grantwire store new-key ~/.grantwire-store.key
  grantwire store new-key new.key && cat new.key >> ~/.grantwire-store.key   # before rotate-key`,
		args: cobra.ExactArgs(1),
		run: operation[string]{
			do: func(_ context.Context, args []string) (string, error) {
				return newKeyFile(a.expandHome(args[0]))
			},
			json: func(id string, args []string) any {
				return map[string]string{"key_id": id, "file": a.expandHome(args[0])}
			},
			render: func(id string, args []string) error {
				a.printf("wrote the key %s to %s (keep it private, and the same on every machine of the store)\n", id, a.expandHome(args[0]))
				return nil
			},
		}.runE(a),
	})
}

// newKeyFile writes a new key-encryption key to path (which must not exist, mode 0600)
// and returns its id.
func newKeyFile(path string) (string, error) {
	k, text, err := postgres.NewKey()
	if err != nil {
		return "", err
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return "", usagef("%s exists: new-key never replaces a key (choose another file)", path)
	}
	if err != nil {
		return "", &hostabi.HostError{Code: hostabi.HostErrIO, Detail: fmt.Sprintf("cannot create %s: %v", path, errors.Unwrap(err)),
			Fix: "mkdir -p " + filepath.Dir(path)}
	}
	_, werr := file.WriteString(text)
	if err := errors.Join(werr, file.Sync(), file.Close()); err != nil {
		_ = os.Remove(path)
		return "", &hostabi.HostError{Code: hostabi.HostErrIO, Detail: fmt.Sprintf("cannot write %s: %v", path, err)}
	}
	return k.ID, nil
}

func (a *app) storeRotateKeyCmd() *cobra.Command {
	var f storeFlags
	var to string
	return a.command(spec{
		use:   "rotate-key --to KEY_ID",
		short: "Make another key the store's active key and wrap every secret's data key again under it",
		long: `Makes KEY_ID the key new secrets are sealed under and wraps every stored secret's data key
again under it, one row at a time while the store is in use. The key file must hold both the
current key and the new one (grantwire store new-key writes one; append it). Give every
machine the new key first: a machine reads its key file again when it meets a key it does
not hold. Afterwards the old key may be removed from the key files.`,
		example: `  grantwire store new-key new.key && cat new.key >> ~/.grantwire-store.key
  grantwire store rotate-key --store postgres://grantwire@db.example.com/grantwire --to k0123456789abcdef`,
		args: cobra.NoArgs,
		run: operation[postgres.Rotation]{
			parse: func(*cobra.Command, []string) error {
				if a.storeURL == "" {
					return errNoStore()
				}
				if to == "" {
					return usagef("rotate-key needs --to KEY_ID (grantwire store new-key prints the id of a new key)")
				}
				return nil
			},
			do: func(ctx context.Context, _ []string) (rot postgres.Rotation, err error) {
				err = a.onStore(ctx, f, func(st *postgres.Store) error {
					rot, err = st.RotateKey(ctx, to)
					return err
				})
				return rot, err
			},
			json: func(rot postgres.Rotation, _ []string) any {
				return map[string]any{"from": jsonx.NonNil(rot.From), "to": rot.To, "rewrapped": rot.Rewrapped, "left": rot.Left}
			},
			render: func(rot postgres.Rotation, _ []string) error {
				a.printf("the store's active key is now %s; %d data keys were wrapped again", rot.To, rot.Rewrapped)
				if len(rot.From) > 0 {
					a.printf(" (under %s before; that key may now leave the key files)", strings.Join(rot.From, ", "))
				}
				a.printf("\n")
				if rot.Left > 0 {
					return &hostabi.HostError{Code: hostabi.HostErrInsecureStore,
						Detail: fmt.Sprintf("%d secrets are sealed under a key this key file does not hold, so they were not wrapped again; add that key to the key file and run rotate-key again", rot.Left)}
				}
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			f.add(cmd)
			cmd.Flags().StringVar(&to, "to", "", "the id of the key to make active (it must be in the key file)")
		},
	})
}

func (a *app) storeMoveAsideCmd() *cobra.Command {
	var f storeFlags
	return a.command(spec{
		use:     "move-aside LEDGER",
		short:   "Move an unreadable ledger of a PostgreSQL store aside (to LEDGER.corrupt), so that it starts empty",
		example: `  grantwire store move-aside --store postgres://grantwire@db.example.com/grantwire connectors/grants.json`,
		args:    cobra.ExactArgs(1),
		run: operation[bool]{
			do: func(ctx context.Context, args []string) (moved bool, err error) {
				err = a.onStore(ctx, f, func(st *postgres.Store) error {
					moved, err = st.MoveAside(ctx, args[0])
					return err
				})
				return moved, err
			},
			json: func(moved bool, args []string) any { return map[string]any{"ledger": args[0], "moved": moved} },
			render: func(moved bool, args []string) error {
				if moved {
					a.printf("moved %s aside to %s.corrupt; it starts empty\n", args[0], args[0])
				} else {
					a.printf("the store has no ledger %s in the home %s; nothing was moved\n", args[0], a.storeHome)
				}
				return nil
			},
		}.runE(a),
		flags: f.add,
	})
}

// onStore runs fn on the store of --store (of $GRANTWIRE_STORE), closed after.
func (a *app) onStore(ctx context.Context, f storeFlags, fn func(*postgres.Store) error) error {
	if a.storeURL == "" {
		return errNoStore()
	}
	st, err := a.openStore(ctx, a.storeURL, a.service, f)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}

func errNoStore() error {
	return usagef("no store: pass --store postgres://USER:PASSWORD@HOST:5432/DATABASE or set %s", envStore)
}
