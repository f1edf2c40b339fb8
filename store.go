package grantwire

import (
	"context"

	"github.com/grantwire/grantwire/shells/postgres"
)

// WithStore keeps the client's ledgers, secrets and provider locks in the PostgreSQL store
// at url (postgres://USER:PASSWORD@HOST:5432/DATABASE, shells/postgres) instead of the home's
// files, the OS credential store and file locks, so that every machine on the same store
// shares one set of connections, grants and locks. The loopback, browser, HTTP, clock and
// events stay the shell's: the store is laid over the capabilities of WithCapabilities
// (New) or of the OS shell (Open).
//
// opts names the home within the store (default "default") and where the key-encryption
// key is (default the file $GRANTWIRE_STORE_KEY_FILE). Its Service, the keyring service of
// the secrets in the store, defaults to the one native.Options names with Open, else to
// hostabi.DefaultService whatever the home's path (a machine's home directory is its own;
// the store's services are shared). With Open, the store's watcher (LISTEN/NOTIFY) replaces the OS
// shell's file watcher: grants and activations another machine changes reach the policy
// (activation_changes, grant_changes) unless opts sets its own ActivationChanges or
// GrantChanges. The client closes the store. A store that cannot be reached fails New or
// Open with a *hostabi.HostError of code STORE_UNAVAILABLE (exit 5 in the CLI); once the
// client is built, an operation that meets a stopped server fails with [ErrStoreUnavailable]
// and the next one after the server is back succeeds (connections are opened again).
func WithStore(url string, opts postgres.Options) Option {
	return func(c *config) {
		c.storeURL = url
		o := opts
		c.storeOpts = &o
	}
}

// layStore opens the store of WithStore and lays it over c.caps; the returned function
// closes it.
func (c *config) layStore(ctx context.Context) (func() error, error) {
	if c.storeOpts == nil {
		return nil, nil
	}
	st, err := postgres.Open(ctx, c.storeURL, *c.storeOpts)
	if err != nil {
		return nil, err
	}
	caps := st.Capabilities(*c.caps)
	c.caps = &caps
	return st.Close, nil
}
