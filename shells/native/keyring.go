package native

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/godbus/dbus/v5"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/secretservice"
)

// Chunking of large values, compatible with GAIA's gaia.connections layout: a value
// longer than chunkRunes characters is split into parts stored at "<user>#0", "<user>#1",
// ..., written before the manifest "\x00gaia-chunked\x00<count>:<crc32 8-hex>" that goes
// into the base slot. A missing part, a malformed manifest or a CRC mismatch (a torn
// rewrite) reads as absent, never as a truncated value.
const (
	chunkSentinel = "\x00gaia-chunked\x00"
	chunkRunes    = 1024 // GAIA's _CHUNK_CHARS
	// chunkBytes keeps every stored part under the smallest platform limit (Windows
	// credentials: 2,560 bytes; macOS: about 3,000 bytes for service, user and value).
	chunkBytes = 2048
)

// backend is the raw store: go-keyring's package functions.
type backend interface {
	Get(service, user string) (string, error)
	Set(service, user, value string) error
	Delete(service, user string) error
}

type goKeyring struct{}

func (goKeyring) Get(service, user string) (string, error) { return gokeyring.Get(service, user) }
func (goKeyring) Set(service, user, value string) error    { return gokeyring.Set(service, user, value) }
func (goKeyring) Delete(service, user string) error        { return gokeyring.Delete(service, user) }

// keyringStore is the Keyring capability: go-keyring with a timeout on every call, GAIA's
// chunking, errors classified into INSECURE_STORE, and no file fallback.
type keyringStore struct {
	b       backend
	timeout time.Duration
	layout  func(user string) string
	getenv  func(string) string
	// setenv sets the D-Bus address read from a keyring session file (nil: never).
	setenv func(key, value string) error
	// gen bumps the service's generation on every write (nil: never); noCache: Generation
	// tells none (cache.go).
	gen     *generations
	noCache bool
}

var _ hostabi.Keyring = (*keyringStore)(nil)

// Get implements hostabi.Keyring: a read of the store (the cache is package host's).
func (k *keyringStore) Get(ctx context.Context, service, user string) (string, error) {
	return k.get(ctx, service, user)
}

// get reads the store.
func (k *keyringStore) get(ctx context.Context, service, user string) (string, error) {
	if err := k.preflight(); err != nil {
		return "", err
	}
	u := k.layout(user)
	raw, found, err := k.rawGet(ctx, service, u)
	if err != nil {
		return "", err
	}
	if !found {
		return "", notFound(service, user)
	}
	if !strings.HasPrefix(raw, chunkSentinel) {
		return raw, nil
	}
	count, crc, ok := parseManifest(raw)
	if !ok {
		return "", fmt.Errorf("native: keyring %s/%s: malformed chunk manifest: %w", service, user, hostabi.ErrNotFound)
	}
	var b strings.Builder
	for i := range count {
		part, found, err := k.rawGet(ctx, service, chunkUser(u, i))
		if err != nil {
			return "", err
		}
		if !found {
			return "", fmt.Errorf("native: keyring %s/%s: part %d of %d is missing (a torn write): %w", service, user, i, count, hostabi.ErrNotFound)
		}
		b.WriteString(part)
	}
	v := b.String()
	if crc != "" && crcHex(v) != crc {
		return "", fmt.Errorf("native: keyring %s/%s: the parts do not match their manifest (a torn write): %w", service, user, hostabi.ErrNotFound)
	}
	return v, nil
}

// Set implements hostabi.Keyring. Small values go into one slot (and stale parts of an
// earlier large value are swept); large values are written part by part, then the manifest.
func (k *keyringStore) Set(ctx context.Context, service, user, value string) error {
	if err := k.preflight(); err != nil {
		return err
	}
	return k.changing(service, func() error { return k.set(ctx, service, user, value) })
}

func (k *keyringStore) set(ctx context.Context, service, user, value string) error {
	u := k.layout(user)
	parts := split(value)
	// A value that starts like a manifest is stored as one part behind a manifest, so it
	// can never be mistaken for one.
	if len(parts) == 1 && !strings.HasPrefix(value, chunkSentinel) {
		if err := k.rawSet(ctx, service, u, value); err != nil {
			return err
		}
		return k.sweep(ctx, service, u, 0)
	}
	for i, p := range parts {
		if err := k.rawSet(ctx, service, chunkUser(u, i), p); err != nil {
			return err
		}
	}
	if err := k.rawSet(ctx, service, u, chunkSentinel+strconv.Itoa(len(parts))+":"+crcHex(value)); err != nil {
		return err
	}
	return k.sweep(ctx, service, u, len(parts))
}

// Delete implements hostabi.Keyring; deleting nothing succeeds.
func (k *keyringStore) Delete(ctx context.Context, service, user string) error {
	if err := k.preflight(); err != nil {
		return err
	}
	return k.changing(service, func() error { return k.delete(ctx, service, user) })
}

func (k *keyringStore) delete(ctx context.Context, service, user string) error {
	u := k.layout(user)
	raw, found, err := k.rawGet(ctx, service, u)
	if err != nil {
		return err
	}
	if found {
		if err := k.rawDelete(ctx, service, u); err != nil {
			return err
		}
		if count, _, ok := parseManifest(raw); strings.HasPrefix(raw, chunkSentinel) && ok {
			for i := range count {
				if err := k.rawDelete(ctx, service, chunkUser(u, i)); err != nil {
					return err
				}
			}
		}
	}
	return k.sweep(ctx, service, u, 0)
}

// sweep deletes the parts "<u>#from", "<u>#from+1", ... while they exist.
func (k *keyringStore) sweep(ctx context.Context, service, u string, from int) error {
	for i := from; ; i++ {
		_, found, err := k.rawGet(ctx, service, chunkUser(u, i))
		if err != nil || !found {
			return err
		}
		if err := k.rawDelete(ctx, service, chunkUser(u, i)); err != nil {
			return err
		}
	}
}

func chunkUser(u string, i int) string { return u + "#" + strconv.Itoa(i) }

func crcHex(v string) string { return fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(v))) }

// parseManifest reads "<sentinel><count>[:<crc>]"; a legacy manifest without a CRC (older
// GAIA) has crc "".
func parseManifest(raw string) (count int, crc string, ok bool) {
	body, found := strings.CutPrefix(raw, chunkSentinel)
	if !found {
		return 0, "", false
	}
	n, c, _ := strings.Cut(body, ":")
	count, err := strconv.Atoi(n)
	if err != nil || count < 1 || count > 4096 {
		return 0, "", false
	}
	if c != "" && len(c) != 8 {
		return 0, "", false
	}
	return count, c, true
}

// split cuts a value into parts of at most chunkRunes characters and chunkBytes bytes, on
// character boundaries. A value that fits is one part.
func split(v string) []string {
	if utf8.RuneCountInString(v) <= chunkRunes && len(v) <= chunkBytes {
		return []string{v}
	}
	var parts []string
	for len(v) > 0 {
		end, runes := 0, 0
		for end < len(v) && runes < chunkRunes {
			_, size := utf8.DecodeRuneInString(v[end:])
			if end+size > chunkBytes {
				break
			}
			end += size
			runes++
		}
		parts = append(parts, v[:end])
		v = v[end:]
	}
	return parts
}

// rawGet reads one slot; found is false when the slot is empty.
func (k *keyringStore) rawGet(ctx context.Context, service, user string) (string, bool, error) {
	var v string
	err := k.call(ctx, "read", func() (err error) { v, err = k.b.Get(service, user); return err })
	if errors.Is(err, gokeyring.ErrNotFound) || secretservice.Vanished(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, classify("read", err)
	}
	return v, true, nil
}

func (k *keyringStore) rawSet(ctx context.Context, service, user, value string) error {
	if err := k.call(ctx, "write", func() error { return k.b.Set(service, user, value) }); err != nil {
		return classify("write", err)
	}
	return nil
}

func (k *keyringStore) rawDelete(ctx context.Context, service, user string) error {
	err := k.call(ctx, "delete", func() error { return k.b.Delete(service, user) })
	if err == nil || errors.Is(err, gokeyring.ErrNotFound) || secretservice.Vanished(err) {
		return nil
	}
	return classify("delete", err)
}

// call runs one backend call bounded by the timeout and ctx. go-keyring has no context:
// on a desktop a locked collection can wait for a password prompt indefinitely, so a call
// that does not answer in time is abandoned (its goroutine ends when the store answers).
func (k *keyringStore) call(ctx context.Context, what string, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	timer := time.NewTimer(k.timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err // classified by the caller
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return insecureStore(fmt.Sprintf("the OS credential store did not answer a %s within %s", what, k.timeout),
			timeoutFix(), nil)
	}
}

// preflight refuses before go-keyring runs when no session bus can exist: godbus would
// otherwise run dbus-launch, which on some systems leaves a stray bus and keyring daemon.
func (k *keyringStore) preflight() error {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return nil
	}
	if addr := k.getenv("DBUS_SESSION_BUS_ADDRESS"); addr != "" && addr != "autolaunch:" {
		return nil
	}
	// A session of scripts/keyring-session.sh (sessionbus.go): godbus reads the address
	// from the environment, as it sets it itself for a /run/user bus it finds.
	addr, why := sessionBus(k.getenv)
	if addr != "" && k.setenv != nil {
		if err := k.setenv("DBUS_SESSION_BUS_ADDRESS", addr); err == nil {
			return nil
		}
	}
	for _, p := range []string{fmt.Sprintf("/run/user/%d/bus", os.Getuid()), fmt.Sprintf("/run/user/%d/dbus-session", os.Getuid())} {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
	}
	msg := "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset, no keyring session file is usable and no /run/user bus exists), so no Secret Service is reachable"
	if len(why) > 0 {
		msg += "; " + strings.Join(why, "; ")
	}
	return insecureStore(msg, installFix(), nil)
}

// classify turns a backend failure into INSECURE_STORE with what to do about it.
func classify(what string, err error) error {
	var execErr *exec.Error
	var dbusErr dbus.Error
	var done *hostabi.HostError
	msg := err.Error()
	switch {
	case errors.As(err, &done), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err // already classified (a timeout), or the caller gave up
	case errors.Is(err, gokeyring.ErrUnsupportedPlatform):
		return insecureStore("no supported OS credential store on "+runtime.GOOS,
			"run grantwire on macOS (Keychain), Windows (Credential Manager) or Linux/BSD with a Secret Service", err)
	case errors.Is(err, gokeyring.ErrSetDataTooBig):
		return insecureStore("the OS credential store refused a value as too large", "", err)
	case errors.As(err, &execErr), isNetErr(err), errors.Is(err, os.ErrNotExist),
		strings.Contains(msg, "couldn't determine address of session bus"):
		return insecureStore("the D-Bus session bus is unreachable, so no Secret Service answers the "+what, installFix(), err)
	case errors.As(err, &dbusErr) && dbusErr.Name == "org.freedesktop.DBus.Error.ServiceUnknown":
		return insecureStore("no Secret Service provider is running on the session bus", installFix(), err)
	case strings.Contains(msg, "failed to unlock correct collection"):
		return insecureStore("the default keyring collection is locked or missing", unlockFix(), err)
	}
	return insecureStore("the OS credential store failed a "+what, installFix(), err)
}

func isNetErr(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne)
}

func insecureStore(message, fix string, cause error) error {
	if cause != nil {
		message += " (" + cut(cause.Error(), 200) + ")"
	}
	if fix == SessionFix {
		message = installAdvice(message)
	}
	return &hostabi.HostError{Code: hostabi.HostErrInsecureStore, Detail: message, Fix: fix}
}

func installFix() string {
	switch runtime.GOOS {
	case "darwin":
		return "run grantwire in a logged-in macOS user session so the login Keychain is available (security unlock-keychain)"
	case "windows":
		return "run grantwire as a logged-in Windows user so Credential Manager is available"
	}
	return SessionFix
}

// SessionFix starts a Secret Service for the shell it is run in (a private dbus-daemon
// and gnome-keyring-daemon, installing gnome-keyring when it can), run from a grantwire
// checkout: the fix where no Secret Service answers (the message says how to install one
// for the desktop instead).
const SessionFix = `eval "$(scripts/keyring-session.sh start)"`

// installAdvice ends the message of a missing Secret Service: what to install for a
// desktop session, and what the fix (SessionFix) does without one.
func installAdvice(message string) string {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return message
	}
	return message + "; install a Secret Service such as gnome-keyring (Debian/Ubuntu: apt-get install gnome-keyring; " +
		"Fedora: dnf install gnome-keyring), KeePassXC or KWallet in a desktop session, or, without one, start a private " +
		"Secret Service for this shell from a grantwire checkout (the fix; scripts/keyring-session.sh stop ends it)"
}

func unlockFix() string {
	if runtime.GOOS == "darwin" {
		return "unlock the login Keychain (security unlock-keychain)"
	}
	return UnlockFix
}

func timeoutFix() string {
	return "unlock the keyring (a locked keyring may be waiting for a password prompt), then retry"
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
