package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/grantwire/grantwire/internal/oprun"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/internal/safefile"
)

// catalogField is a field name an entry may hold (the policy judges which ones it does).
var catalogField = regexp.MustCompile(`^[a-z][a-z_]{0,63}$`)

// catalogSetCmd changes text fields of one entry of the user's catalog file: the fix of an
// issuer mismatch (oauth.issuer_fix) runs it. The new document is judged by the policy as
// every catalog file is (validate_catalog, strictly) before it replaces the file, in one
// rename; nothing is written when it is refused.
func (a *app) catalogSetCmd() *cobra.Command {
	return a.command(spec{
		use:   "set <connector> <field>=<value>...",
		short: "Change text fields of a connector in the catalog file in use",
		long: `Change text fields (issuer, authorization_url, token_url, tenant, url, …) of one
connector in the catalog file given by --catalog FILE or $GRANTWIRE_CATALOG; an empty value
removes the field. The file is judged by the policy as any catalog file is before it is
replaced (atomically, keeping its mode); nothing is written when it is refused. Lists and
other non-text fields are edited in the file itself. The embedded catalog is not edited:
start a file with grantwire catalog --raw > my-catalog.json.`,
		example: `  grantwire --catalog my-catalog.json catalog set google issuer=https://login.example.com
  GRANTWIRE_CATALOG=my-catalog.json grantwire catalog set google tenant=`,
		args: rangeArgs(2, 64),
		run: operation[string]{
			do: a.setCatalog,
			json: func(path string, args []string) any {
				return map[string]any{"file": path, "connector": args[0], "set": args[1:]}
			},
			render: func(path string, args []string) error {
				a.printf("%s: %s set in %s.\n", args[0], strings.Join(args[1:], " "), path)
				return nil
			},
		}.runE(a),
	})
}

// setCatalog sets the fields of args[1:] in the entry args[0] of the catalog file and
// returns the file's path.
func (a *app) setCatalog(ctx context.Context, args []string) (string, error) {
	if a.bundlePath != "" || a.serverURL != "" {
		return "", usagef("the catalog of a bundle or an OPA server is not edited here: edit the catalog file it was built from")
	}
	if a.catalogPath == "" {
		return "", usagef("no catalog file is in use (--catalog FILE or $%s): the embedded catalog is not edited; start a file with grantwire catalog --raw > my-catalog.json", envCatalog)
	}
	sets := map[string]string{}
	for _, kv := range args[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !catalogField.MatchString(k) {
			return "", usagef("%q is not field=value (a field is lower-case letters and _)", kv)
		}
		sets[k] = v
	}
	path, err := filepath.EvalSymlinks(a.catalogPath)
	if err != nil {
		return "", usagef("--catalog: %v", err)
	}
	raw, info, err := safefile.ReadFile(path, catalog.MaxFileBytes)
	if err != nil {
		return "", usagef("--catalog: %v", err)
	}
	var doc map[string]json.RawMessage
	var connectors map[string]map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil || json.Unmarshal(doc["connectors"], &connectors) != nil {
		return "", usagef("--catalog: %s is not a catalog document ({\"connectors\": {id: entry}})", path)
	}
	entry, ok := connectors[args[0]]
	if !ok || entry == nil {
		return "", a.unknownConnector(ctx, args[0])
	}
	for k, v := range sets {
		if old, ok := entry[k]; ok && (len(old) == 0 || old[0] != '"') {
			return "", usagef("%s of %s is not text: edit it in %s", k, args[0], path)
		}
		if v == "" {
			delete(entry, k)
			continue
		}
		entry[k], _ = json.Marshal(v)
	}
	doc["connectors"], _ = json.Marshal(connectors)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", err
	}
	return path, a.replaceCatalog(ctx, path, append(out, '\n'), info.Mode().Perm())
}

// replaceCatalog writes the new catalog beside the file, has the policy judge it as the
// file it becomes, and renames it over the file; the temporary file is removed otherwise.
func (a *app) replaceCatalog(ctx context.Context, path string, body []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(body); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	cat, err := catalog.LoadFile(tmp.Name())
	if err != nil {
		return usagef("%s would not be a catalog: %v; nothing was written", path, strings.ReplaceAll(err.Error(), tmp.Name(), path))
	}
	// The policy judges the catalog its engine was given: an engine on the new document.
	ch := a.engineChoice()
	ch.Catalog = cat
	asm := oprun.Assemble(ch)
	defer func() { _ = asm.Close(context.WithoutCancel(ctx)) }()
	engine, err := asm.Engine(ctx)
	if err != nil {
		return fmt.Errorf("policy engine %s: %w", a.engineName, err)
	}
	if err := oprun.ValidateCatalog(ctx, engine, cat); err != nil {
		var ge *grantwire.Error
		if errors.As(err, &ge) {
			ge.Summary = strings.ReplaceAll(ge.Summary, tmp.Name(), path) + "; nothing was written"
		}
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	done = true
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
