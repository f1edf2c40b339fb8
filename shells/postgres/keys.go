package postgres

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/grantwire/grantwire/hostabi"
)

// Key-encryption keys.
//
// A key is 32 random bytes (AES-256). The user supplies the keys as text, one per line in
// standard base64 ('#' starts a comment line), in a file (Options.KeyFile, else the file
// named by $GRANTWIRE_STORE_KEY_FILE: mode 0600, as for an SSH key) or in an environment
// variable (Options.KeyEnv names it). A key's id is "k" and 16 hex digits of the SHA-256 of
// a label and the key: it names the key in the store and in messages without revealing it.
//
// The store records the ids of the keys that sealed its secrets, and which one is active:
// every new secret is sealed under the active key. The order of the lines does not matter,
// so a machine may hold the old and the new key while a rotation runs (RotateKey). A secret
// under a key this machine does not hold makes it read its key source again, once.

// KeyFileEnv names the file of the key-encryption keys when Options.KeyFile is empty.
const KeyFileEnv = "GRANTWIRE_STORE_KEY_FILE"

// keyLen is the length of a key-encryption key and of a data key (AES-256).
const keyLen = 32

// Key is one key-encryption key.
type Key struct {
	ID  string
	key []byte
}

// NewKey returns a new random key and its text for a key file (a comment naming its id,
// then the key in base64).
func NewKey() (Key, string, error) {
	b := make([]byte, keyLen)
	if _, err := rand.Read(b); err != nil {
		return Key{}, "", err
	}
	k := Key{ID: keyID(b), key: b}
	return k, fmt.Sprintf("# grantwire store key %s, created %s\n%s\n", k.ID, time.Now().UTC().Format(time.RFC3339),
		base64.StdEncoding.EncodeToString(b)), nil
}

func keyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("grantwire.store.key-id.v1\x00"), key...))
	return "k" + hex.EncodeToString(sum[:8])
}

// keyRing is a Store's keys: those of its source, and the store's active one.
type keyRing struct {
	mu     sync.Mutex
	source keySource
	keys   map[string]Key
	first  string // the first key of the source (sealing a new store's first secret)
	active string // the store's active key id, as last seen
}

// keySource is where the keys come from: a file or an environment variable.
type keySource struct {
	file, env string
	getenv    func(string) string
}

func (k keySource) String() string {
	if k.env != "" {
		return "the environment variable " + k.env
	}
	return k.file
}

func (k keySource) fixHint() string {
	if k.env != "" {
		return "set " + k.env + " to the store's key (the text of the key file of the machines that use the store)"
	}
	return "put the store's key in " + k.file + " (copy the key file of the machines that use the store)"
}

// loadKeys reads the keys Options names.
func loadKeys(opts Options) (*keyRing, error) {
	src := keySource{file: opts.KeyFile, env: opts.KeyEnv, getenv: opts.Getenv}
	if src.env == "" && src.file == "" {
		src.file = opts.Getenv(KeyFileEnv)
	}
	if src.env == "" && src.file == "" {
		return nil, &hostabi.HostError{Code: hostabi.HostErrInsecureStore,
			Detail: "no key-encryption key for the PostgreSQL store's secrets: " + KeyFileEnv + " is not set; grantwire store new-key ~/.grantwire-store.key && export " + KeyFileEnv + "=~/.grantwire-store.key (or use the key file of the machines that already share the store)"}
	}
	r := &keyRing{source: src}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// reload reads the key source again.
func (r *keyRing) reload() error {
	keys, first, err := r.source.read()
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.keys, r.first = keys, first
	r.mu.Unlock()
	return nil
}

// read parses the source's text: one base64 key per line, '#' comments, blank lines.
// Messages name lines, never their content.
func (k keySource) read() (map[string]Key, string, error) {
	var text string
	if k.env != "" {
		text = k.getenv(k.env)
		if text == "" {
			return nil, "", &hostabi.HostError{Code: hostabi.HostErrInsecureStore,
				Detail: "no key-encryption key for the PostgreSQL store's secrets: " + k.env + " is empty or unset" + "; " + k.fixHint()}
		}
	} else {
		b, err := readKeyFile(k.file)
		if err != nil {
			return nil, "", err
		}
		text = string(b)
	}
	keys, first := map[string]Key{}, ""
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(b) != keyLen {
			return nil, "", &hostabi.HostError{Code: hostabi.HostErrInsecureStore,
				Detail: fmt.Sprintf("line %d of %s is not a key-encryption key (32 random bytes in base64)", i+1, k) + "; " + "grantwire store new-key FILE writes one; " + k.fixHint()}
		}
		key := Key{ID: keyID(b), key: b}
		if first == "" {
			first = key.ID
		}
		keys[key.ID] = key
	}
	if first == "" {
		return nil, "", &hostabi.HostError{Code: hostabi.HostErrInsecureStore,
			Detail: fmt.Sprintf("%s holds no key-encryption key", k) + "; " + "grantwire store new-key FILE writes one; " + k.fixHint()}
	}
	return keys, first, nil
}

// readKeyFile reads a key file that only its owner may read.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		fix := "grantwire store new-key " + path + " (a new store), or copy the key file of the machines that share the store to " + path
		return nil, &hostabi.HostError{Code: hostabi.HostErrInsecureStore,
			Detail: fmt.Sprintf("the key file %s of the PostgreSQL store cannot be read (%v)", path, errors.Unwrap(err)) + "; " + fix}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &hostabi.HostError{Code: hostabi.HostErrInsecureStore,
			Detail: fmt.Sprintf("the key file %s is not a regular file", path)}
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, &hostabi.HostError{Code: hostabi.HostErrInsecureStore,
			Detail: fmt.Sprintf("the key file %s has mode %#o, so other users may read the key; grantwire uses it only when it is private", path, perm),
			Fix:    "chmod 600 " + path}

	}
	return io.ReadAll(io.LimitReader(f, 1<<20))
}

func (r *keyRing) get(id string) (Key, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.keys[id]
	return k, ok
}

// lookup returns the key id, reading the source again once when it is not held.
func (r *keyRing) lookup(id string) (Key, bool) {
	if k, ok := r.get(id); ok {
		return k, true
	}
	if r.reload() != nil {
		return Key{}, false
	}
	return r.get(id)
}

func (r *keyRing) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.keys))
	for id := range r.keys {
		out = append(out, id)
	}
	return out
}

func (r *keyRing) activeID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.active
}

func (r *keyRing) setActive(id string) {
	r.mu.Lock()
	r.active = id
	r.mu.Unlock()
}

// ensureKey makes the first key of the source the store's active key when it has none,
// and checks that this machine holds the active key.
func (s *Store) ensureKey(ctx context.Context) error {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	_, err := s.pool.Exec(ctx, `insert into grantwire.keys (key_id, active)
		select $1, true where not exists (select 1 from grantwire.keys where active) on conflict do nothing`, s.keys.first)
	if err != nil {
		return s.fail("record the key-encryption key", err)
	}
	return s.refreshActive(ctx)
}

// refreshActive reads the store's active key and checks that this machine holds it.
func (s *Store) refreshActive(ctx context.Context) error {
	var id string
	if err := s.pool.QueryRow(ctx, "select key_id from grantwire.keys where active").Scan(&id); err != nil {
		return s.fail("read the active key-encryption key", err)
	}
	if _, ok := s.keys.lookup(id); !ok {
		return &hostabi.HostError{Code: hostabi.HostErrInsecureStore,
			Detail: fmt.Sprintf("the PostgreSQL store %s seals its secrets under the key %s, which %s does not hold (it holds %s)", s.display, id, s.keys.source, strings.Join(s.keys.ids(), ", ")) + "; " + s.keys.source.fixHint()}
	}
	s.keys.setActive(id)
	return nil
}

// seal encrypts value under a new data key, wrapped by the key-encryption key k; both
// seals are bound to the row's service and user.
func seal(k Key, service, user string, value []byte) (wrapped, sealed []byte, err error) {
	dek := make([]byte, keyLen)
	if _, err := rand.Read(dek); err != nil {
		return nil, nil, err
	}
	if sealed, err = gcmSeal(dek, value, valueAAD(service, user)); err != nil {
		return nil, nil, err
	}
	if wrapped, err = gcmSeal(k.key, dek, wrapAAD(k.ID, service, user)); err != nil {
		return nil, nil, err
	}
	return wrapped, sealed, nil
}

// errSealBroken: a seal did not open (a tampered or corrupt row, or a row moved).
var errSealBroken = errors.New("postgres: the seal does not open")

// unwrap opens a wrapped data key.
func unwrap(k Key, service, user string, wrapped []byte) ([]byte, error) {
	return gcmOpen(k.key, wrapped, wrapAAD(k.ID, service, user))
}

// unseal opens a sealed value with its key-encryption key.
func unseal(k Key, service, user string, wrapped, sealed []byte) ([]byte, error) {
	dek, err := unwrap(k, service, user, wrapped)
	if err != nil {
		return nil, err
	}
	return gcmOpen(dek, sealed, valueAAD(service, user))
}

// rewrap wraps a data key again under another key-encryption key.
func rewrap(from, to Key, service, user string, wrapped []byte) ([]byte, error) {
	dek, err := unwrap(from, service, user, wrapped)
	if err != nil {
		return nil, err
	}
	return gcmSeal(to.key, dek, wrapAAD(to.ID, service, user))
}

func valueAAD(service, user string) []byte {
	return []byte("grantwire.store.secret.v1\x00" + service + "\x00" + user)
}

func wrapAAD(keyID, service, user string) []byte {
	return []byte("grantwire.store.data-key.v1\x00" + keyID + "\x00" + service + "\x00" + user)
}

// sealVersion is the first byte of every seal: the format (AES-256-GCM, 12-byte nonce).
const sealVersion = 1

func gcmSeal(key, plain, aad []byte) ([]byte, error) {
	a, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1+a.NonceSize(), 1+a.NonceSize()+len(plain)+a.Overhead())
	out[0] = sealVersion
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, err
	}
	return a.Seal(out, out[1:], plain, aad), nil
}

func gcmOpen(key, box, aad []byte) ([]byte, error) {
	a, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	if len(box) < 1+a.NonceSize()+a.Overhead() || box[0] != sealVersion {
		return nil, errSealBroken
	}
	plain, err := a.Open(nil, box[1:1+a.NonceSize()], box[1+a.NonceSize():], aad)
	if err != nil {
		return nil, errSealBroken
	}
	return plain, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// Rotation is what RotateKey did.
type Rotation struct {
	// From are the keys secrets were sealed under before; To the key now active.
	From []string
	To   string
	// Rewrapped counts the data keys wrapped again; Left those still under another key
	// (0 unless a secret's key is not held here).
	Rewrapped, Left int
}

// RotateKey makes the key to the store's active key and wraps every secret's data key
// again under it, one row at a time while the store is in use: no value is decrypted
// beyond its data key, and no reader waits. The Store must hold both the keys the
// secrets are under and to (a key file with the old and the new key): every machine's key
// file should hold the new key before the rotation (machines read their key file again when
// they meet a key they do not hold), and may drop the old one after it.
func (s *Store) RotateKey(ctx context.Context, to string) (Rotation, error) {
	newKey, ok := s.keys.lookup(to)
	if !ok {
		return Rotation{}, &hostabi.HostError{Code: hostabi.HostErrInsecureStore,
			Detail: fmt.Sprintf("%s does not hold the key %s to rotate to", s.keys.source, to) + "; " + "add the new key (grantwire store new-key FILE) to " + s.keys.source.String() + " beside the current one, then run rotate-key --to its id"}
	}
	rot := Rotation{To: to}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `select coalesce(array_agg(distinct key_id order by key_id), '{}') from grantwire.secrets where key_id <> $1`, to).Scan(&rot.From); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "insert into grantwire.keys (key_id) values ($1) on conflict do nothing", to); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "update grantwire.keys set active = false where active and key_id <> $1", to); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "update grantwire.keys set active = true where key_id = $1", to)
		return err
	})
	if err != nil {
		return rot, s.fail("make "+to+" the active key", err)
	}
	s.keys.setActive(to)
	for {
		n, left, err := s.rewrapBatch(ctx, newKey, 100)
		rot.Rewrapped += n
		if err != nil {
			return rot, err
		}
		if n == 0 {
			rot.Left = left
			return rot, nil
		}
	}
}

// rewrapBatch wraps again up to limit data keys not under to. A row changed meanwhile
// (revision) is left for the next batch; a row under a key not held here is counted.
func (s *Store) rewrapBatch(ctx context.Context, to Key, limit int) (done, left int, err error) {
	rows, err := s.pool.Query(ctx, `select service, "user", key_id, wrapped_key, revision from grantwire.secrets
		where key_id <> $1 order by service, "user"`, to.ID)
	if err != nil {
		return 0, 0, s.fail("list the secrets to wrap again", err)
	}
	type row struct {
		service, user, keyID string
		wrapped              []byte
		revision             int64
	}
	var todo []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.service, &r.user, &r.keyID, &r.wrapped, &r.revision); err != nil {
			rows.Close()
			return 0, 0, s.fail("list the secrets to wrap again", err)
		}
		todo = append(todo, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, s.fail("list the secrets to wrap again", err)
	}
	for _, r := range todo {
		from, ok := s.keys.lookup(r.keyID)
		if !ok {
			left++
			continue
		}
		if done >= limit {
			break
		}
		w, err := rewrap(from, to, r.service, r.user, r.wrapped)
		if err != nil {
			return done, left, &hostabi.HostError{Code: hostabi.HostErrInsecureStore,
				Detail: fmt.Sprintf("the data key of %s/%s does not open under %s (a corrupt or tampered row); it was left as it is", r.service, r.user, r.keyID)}
		}
		tag, err := s.pool.Exec(ctx, `update grantwire.secrets set key_id = $1, wrapped_key = $2
			where service = $3 and "user" = $4 and revision = $5 and key_id = $6`, to.ID, w, r.service, r.user, r.revision, r.keyID)
		if err != nil {
			return done, left, s.fail("wrap a data key again", err)
		}
		if tag.RowsAffected() == 1 {
			done++
		}
	}
	return done, left, nil
}
