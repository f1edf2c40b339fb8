package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire/shells/native"
)

// Secrets reach the CLI only from stdin (a pipe, or typed without echo on a terminal) or
// from files: never from arguments, which stay in shell history and the process list.
// Errors about secret input name lines and keys, never values.

const maxSecretInput = 1 << 20

// readAllLimited reads at most maxSecretInput bytes.
func readAllLimited(r io.Reader, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxSecretInput+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if len(b) > maxSecretInput {
		return nil, usagef("%s is larger than %d bytes", what, maxSecretInput)
	}
	return b, nil
}

// oneLine turns input that must hold a single value into that value: trailing line
// endings are dropped, anything else is kept exactly.
func oneLine(b []byte, what string) (string, error) {
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		return "", usagef("%s is empty", what)
	}
	if strings.ContainsAny(s, "\r\n") {
		return "", usagef("%s must be a single line", what)
	}
	return s, nil
}

// readSecretFile reads a file that holds secrets, warning when other users may read it.
func (a *app) readSecretFile(path string) ([]byte, error) {
	path = a.expandHome(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("cannot read %s: %v", path, errors.Unwrap(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		a.warnf("%s is readable by other users (mode %#o); chmod 600 it", path, fi.Mode().Perm())
	}
	return readAllLimited(f, path)
}

// secretLine reads one secret: from a file when path is set, else from stdin (without
// echo after a prompt on a terminal).
func (a *app) secretLine(path, label string) (string, error) {
	if path != "" {
		b, err := a.readSecretFile(path)
		if err != nil {
			return "", err
		}
		return oneLine(b, path)
	}
	if a.StdinTTY && a.ReadPassword != nil {
		fmt.Fprintf(a.Stderr, "%s (input hidden): ", label)
		s, err := a.ReadPassword()
		fmt.Fprintln(a.Stderr)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", label, err)
		}
		return oneLine([]byte(s), label)
	}
	b, err := readAllLimited(a.Stdin, "stdin")
	if err != nil {
		return "", err
	}
	return oneLine(b, label+" on stdin")
}

// parseKeyValues reads KEY=VALUE lines whose KEY is one of known. Blank lines and lines
// starting with # are skipped; the value is everything after the first "=" (a trailing \r
// is dropped). A line that is not KEY=VALUE with a known key is refused without showing
// any part of it: a secret piped without "KEY=" but holding "=" (base64 padding, a URL
// query) would otherwise be echoed as a key name. whose names what takes the keys
// ("mcp-brave-search"). Only known keys are ever named (a key given twice).
func parseKeyValues(b []byte, source string, known []string, whose string) (map[string]string, []string, error) {
	list := "none"
	if len(known) > 0 {
		list = strings.Join(known, ", ")
	}
	out := map[string]string{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), maxSecretInput)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !slices.Contains(known, k) {
			return nil, nil, usagef("%s line %d is not KEY=VALUE with a key that %s takes (%s); the line is not shown, in case it is a secret", source, n, whose, list)
		}
		if _, dup := out[k]; dup {
			return nil, nil, usagef("%s line %d: %s is given twice", source, n, k)
		}
		out[k] = v
		order = append(order, k)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, usagef("%s: %v", source, err)
	}
	return out, order, nil
}

// promptLine reads a visible line from the terminal on stdin.
func (a *app) promptLine(r *bufio.Reader, label string) (string, error) {
	fmt.Fprintf(a.Stderr, "%s: ", label)
	s, err := r.ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && s != "") {
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		return "", err
	}
	return strings.TrimRight(s, "\r\n"), nil
}

// promptHidden reads a line from the terminal without echo.
func (a *app) promptHidden(label string) (string, error) {
	fmt.Fprintf(a.Stderr, "%s (input hidden): ", label)
	s, err := a.ReadPassword()
	fmt.Fprintln(a.Stderr)
	return strings.TrimRight(s, "\r\n"), err
}

func (a *app) keyringCmd() *cobra.Command {
	return a.command(spec{
		use:   "keyring",
		short: "Unlock the OS credential store's keyring",
		long: `Commands about the OS credential store that grantwire keeps every secret in: unlock unlocks a
locked gnome-keyring collection, the fix grantwire prints when the keyring is locked.`,
		example: `  grantwire keyring unlock`,
	}, a.keyringUnlockCmd())
}

func (a *app) keyringUnlockCmd() *cobra.Command {
	return a.command(spec{
		use:   "unlock",
		short: "Unlock the Secret Service's default keyring with its password (gnome-keyring)",
		long: `Unlock the default collection of the Secret Service that grantwire uses (the login keyring),
reading its password from the terminal without echo, or as one line on stdin. It unlocks the
gnome-keyring-daemon already running on the session bus ($DBUS_SESSION_BUS_ADDRESS), where
"gnome-keyring-daemon --unlock" would start a second daemon and leave the first locked. A
collection already unlocked stays so; a wrong password leaves it locked (exit 5). Other
Secret Services (KeePassXC, KWallet) are unlocked in their own window.`,
		example: `  grantwire keyring unlock
  grantwire keyring unlock < ~/.config/keyring-password`,
		args: noArgs,
		run: operation[string]{
			do: func(ctx context.Context, _ []string) (string, error) {
				password, err := a.secretLine("", "keyring password")
				if err != nil {
					return "", err
				}
				return native.UnlockDefaultCollection(ctx, a.Getenv, password)
			},
			json: func(coll string, _ []string) any { return map[string]any{"collection": coll, "locked": false} },
			render: func(coll string, _ []string) error {
				a.printf("Unlocked %s.\n", coll)
				return nil
			},
		}.runE(a),
	})
}
