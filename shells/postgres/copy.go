package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/grantwire/grantwire/hostabi"
)

// Side is one end of a copy: a home's ledgers and a keyring service, through capabilities
// (the OS shell's home and keyring, or a Store's).
type Side struct {
	// Name says which home this is in messages (a directory, a store URL and home).
	Name    string
	Files   hostabi.Files
	Keyring hostabi.Keyring
	Service string
	// Ledgers lists the home's ledgers that may exist; Users the keyring users of the
	// service that may hold a value. A name listed but absent is skipped.
	Ledgers func(ctx context.Context) ([]string, error)
	Users   func(ctx context.Context) ([]string, error)
}

// Side is the store's home and keyring service as one end of a copy: every ledger row of
// the home and every secret of the service.
func (s *Store) Side() Side {
	return Side{
		Name:    s.display + "/" + s.opts.Home,
		Files:   ledgerFiles{l: s.ledgers},
		Keyring: s.secrets,
		Service: s.opts.Service,
		Ledgers: s.ledgers.names,
		Users:   func(ctx context.Context) ([]string, error) { return s.secrets.Users(ctx, s.opts.Service) },
	}
}

// CopyOptions configures Copy.
type CopyOptions struct {
	// Replace lets the copy overwrite a ledger or a secret the destination holds with
	// another value; without it such a difference stops the copy before anything is
	// written.
	Replace bool
}

// CopyReport is what Copy copied: names only, never a value.
type CopyReport struct {
	Ledgers []string `json:"ledgers"`
	Secrets []string `json:"secrets"`
	// Same counts the ledgers and secrets the destination already held as they are.
	Same int `json:"same"`
}

// Copy copies every ledger of from's home (byte for byte, a corrupt one too) and every
// secret of from's keyring service to the other side. Secrets go from one store to the
// other in this process's memory only, never through a file. Everything is read and
// compared first: when the destination holds a ledger or secret with another value and
// opts.Replace is not set, nothing is written and the error names them. Secrets are written
// before ledgers (the ledgers' mirrors of connections never point at secrets that are not
// there), and the copy is read back and compared at the end. A copy that stopped midway
// (the store went down) is completed by running it again.
func Copy(ctx context.Context, from, to Side, opts CopyOptions) (CopyReport, error) {
	var rep CopyReport
	names, err := from.Ledgers(ctx)
	if err != nil {
		return rep, err
	}
	users, err := from.Users(ctx)
	if err != nil {
		return rep, err
	}
	sort.Strings(names)
	sort.Strings(users)
	docs := map[string][]byte{}
	values := map[string]string{}
	var differ []string
	for _, name := range names {
		doc, _, err := from.Files.Read(ctx, name)
		if err != nil {
			return rep, fmt.Errorf("read %s of %s: %w", name, from.Name, err)
		}
		if doc == nil {
			continue
		}
		cur, _, err := to.Files.Read(ctx, name)
		if err != nil {
			return rep, fmt.Errorf("read %s of %s: %w", name, to.Name, err)
		}
		if cur != nil && bytes.Equal(cur, doc) {
			rep.Same++
			continue
		}
		if cur != nil && !opts.Replace {
			differ = append(differ, "the ledger "+name)
		}
		docs[name] = doc
	}
	for _, user := range users {
		v, err := from.Keyring.Get(ctx, from.Service, user)
		if errors.Is(err, hostabi.ErrNotFound) {
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("read the secret %s of %s: %w", user, from.Name, err)
		}
		cur, err := to.Keyring.Get(ctx, to.Service, user)
		switch {
		case err == nil && cur == v:
			rep.Same++
			continue
		case err == nil && !opts.Replace:
			differ = append(differ, "the secret "+user)
		case err != nil && !errors.Is(err, hostabi.ErrNotFound):
			return rep, fmt.Errorf("read the secret %s of %s: %w", user, to.Name, err)
		}
		values[user] = v
	}
	if len(differ) > 0 {
		return rep, &hostabi.HostError{Code: hostabi.HostErrIO,
			Detail: fmt.Sprintf("%s already holds other values than %s for %s; nothing was copied", to.Name, from.Name, joinNames(differ)) + "; " + "copy again with --replace to overwrite them with " + from.Name + "'s"}
	}
	for _, user := range slices.Sorted(maps.Keys(values)) {
		if err := to.Keyring.Set(ctx, to.Service, user, values[user]); err != nil {
			return rep, fmt.Errorf("store the secret %s in %s: %w", user, to.Name, err)
		}
		rep.Secrets = append(rep.Secrets, user)
	}
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		doc := docs[name]
		if err := to.Files.Update(ctx, name, func([]byte, string) ([]byte, error) { return doc, nil }); err != nil {
			return rep, fmt.Errorf("write %s to %s: %w", name, to.Name, err)
		}
		rep.Ledgers = append(rep.Ledgers, name)
	}
	for name, doc := range docs {
		if got, _, err := to.Files.Read(ctx, name); err != nil || !bytes.Equal(got, doc) {
			return rep, fmt.Errorf("%s of %s does not read back as copied (%v)", name, to.Name, err)
		}
	}
	for user, v := range values {
		if got, err := to.Keyring.Get(ctx, to.Service, user); err != nil || got != v {
			return rep, fmt.Errorf("the secret %s of %s does not read back as copied (%v)", user, to.Name, err)
		}
	}
	return rep, nil
}

func joinNames(names []string) string {
	if len(names) > 5 {
		return fmt.Sprintf("%s and %d more", joinNames(names[:5]), len(names)-5)
	}
	out := ""
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			out += " and "
		default:
			out += ", "
		}
		out += n
	}
	return out
}
