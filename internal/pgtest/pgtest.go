// Package pgtest holds what grantwire's PostgreSQL tests share: the private cluster that
// scripts/postgres-lib.sh starts (make test, scripts/with-postgres.sh), a rule for when its
// absence fails a test rather than skipping it, and a fresh database per test. Only tests
// import it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// URLEnv names the cluster's URL (postgres://grantwire:<password>@127.0.0.1:<port>/grantwire),
// exported by scripts/postgres-lib.sh's pg_start.
const URLEnv = "GRANTWIRE_TEST_POSTGRES"

// RequireEnv set to 1 (make test, scripts/with-postgres.sh) makes a missing cluster fail
// the PostgreSQL tests; otherwise they skip and say how to run them.
const RequireEnv = "GRANTWIRE_REQUIRE_POSTGRES"

// URL returns the cluster's URL: it skips the test when there is none (saying how to run
// it), fails it when RequireEnv is 1 or the cluster does not answer within 10 s.
func URL(t testing.TB, pkg string) string {
	t.Helper()
	u := os.Getenv(URLEnv)
	if u == "" {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s=1 but %s is not set: run the tests with scripts/with-postgres.sh (it starts a private PostgreSQL; apt-get install postgresql when it is missing)", RequireEnv, URLEnv)
		}
		t.Skipf("PostgreSQL test: run it with a private cluster: make test, or scripts/with-postgres.sh go test %s (sets %s and %s=1)", pkg, URLEnv, RequireEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("%s is set but PostgreSQL does not answer: %v", URLEnv, err)
	}
	_ = conn.Close(ctx)
	return u
}

// Database creates a fresh database on the cluster and returns its URL; it is dropped when
// the test ends.
func Database(t testing.TB, pkg string) string {
	t.Helper()
	base := URL(t, pkg)
	name := "t_" + RandHex(6)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "create database "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, "drop database if exists "+name+" with (force)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// Password is the password of a URL ("" when it has none): tests search outputs for it.
func Password(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// RandHex returns n random bytes in hex.
func RandHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
