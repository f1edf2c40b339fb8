package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/grantwire/grantwire/hostabi"
)

// fail turns an error of the database into what the core reports: the caller's
// cancellation and failures already described pass through; a database that cannot be
// reached (or stopped answering) is "unavailable"; anything else the server refused is an
// IO failure naming the server's reason. Messages carry no value of a row (the statements
// send them as parameters, and the server's messages quoted here name none) and never the
// URL's password.
func (s *Store) fail(what string, err error) error {
	var he *hostabi.HostError
	var refused *hostabi.FileRefused
	switch {
	case err == nil:
		return nil
	case errors.As(err, &he), errors.As(err, &refused), errors.Is(err, hostabi.ErrConflict),
		errors.Is(err, hostabi.ErrBusy), errors.Is(err, hostabi.ErrNotFound):
		return err
	case errors.Is(err, context.Canceled):
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && !connectionClass(pgErr.Code) {
		switch pgErr.Code {
		case "28P01", "28000": // invalid_password, invalid_authorization_specification
			return &hostabi.HostError{Code: hostabi.HostErrIO,
				Detail: fmt.Sprintf("the PostgreSQL store %s refused the login (%s); nothing was changed; check the user and password of the store URL (GRANTWIRE_STORE or --store)", s.display, pgErr.Message)}
		case "3D000": // invalid_catalog_name
			return &hostabi.HostError{Code: hostabi.HostErrIO,
				Detail: fmt.Sprintf("the PostgreSQL store %s has no such database (%s); nothing was changed", s.display, pgErr.Message) + "; " + fmt.Sprintf("createdb -h %s -p %s DATABASE (the database of the store URL), then retry", s.host, s.port)}
		case "42501": // insufficient_privilege
			return &hostabi.HostError{Code: hostabi.HostErrIO,
				Detail: fmt.Sprintf("the PostgreSQL store %s refused to %s (%s); nothing was changed; grant the store's user the privileges on schema grantwire (GRANT ALL ON SCHEMA grantwire TO USER), or use the user that created it", s.display, what, pgErr.Message)}
		}
		return &hostabi.HostError{Code: hostabi.HostErrIO,
			Detail: fmt.Sprintf("the PostgreSQL store %s could not %s (%s, SQLSTATE %s)", s.display, what, pgErr.Message, pgErr.Code)}
	}
	return s.unavailable(what, err)
}

// unavailable is the failure of a database that cannot be reached or stopped answering:
// STORE_UNAVAILABLE, whose fix is the command that checks the server. Nothing needs doing
// but starting it: the pools open new connections on the next call.
func (s *Store) unavailable(what string, err error) error {
	return &hostabi.HostError{Code: hostabi.HostErrStoreUnavailable,
		Detail: fmt.Sprintf("store unavailable: the PostgreSQL store %s does not answer (%s, while trying to %s); nothing was changed, and calls succeed again once it answers: start PostgreSQL there, or correct the store URL (GRANTWIRE_STORE or --store)", s.display, reason(err), what),
		Fix:    fmt.Sprintf("pg_isready -h %s -p %s", s.host, s.port)}
}

// connectionClass reports SQLSTATEs of a connection that is gone or going: class 08
// (connection exception) and the shutdown codes of class 57.
func connectionClass(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03", "57P05":
		return true
	}
	return len(code) == 5 && code[:2] == "08"
}

// reason says in a few words why a database could not be reached, without the library's
// connection summary (which names the user and database).
func reason(err error) string {
	var pgErr *pgconn.PgError
	var netErr net.Error
	switch {
	case errors.As(err, &pgErr):
		return pgErr.Message
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection was closed"
	case errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err):
		return "no answer in time"
	case errors.As(err, &netErr):
		var dns *net.DNSError
		if errors.As(err, &dns) {
			return "the host name " + dns.Name + " does not resolve"
		}
		return "a network error"
	case errors.Is(err, errClosed):
		return "the store was closed"
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return "could not connect"
	}
	return "the connection failed"
}

// randomID is a process's id in notifications (never a secret).
func randomID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("postgres: %v", err))
	}
	return hex.EncodeToString(b[:])
}
