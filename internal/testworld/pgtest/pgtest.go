// Package pgtest holds what grantwire's PostgreSQL tests share: the private cluster that
// scripts/postgres-lib.sh starts (make test, scripts/with-postgres.sh), a rule for when its
// absence fails a test rather than skipping it, and a fresh database per test. Only tests
// import it.
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/grantwire/grantwire/internal/testworld/testenv"
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
	name := "t_" + testenv.RandHex(6)
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

// Cluster is a private PostgreSQL cluster of one test (scripts/postgres-lib.sh), for tests
// that stop and start the server: the shared cluster of URLEnv serves other packages'
// tests meanwhile.
type Cluster struct {
	URL  string
	env  []string
	dir  string
	root string
}

// NewCluster starts a cluster of the test's own (about 3 s); it is removed when the test
// ends. It needs the cluster of URLEnv to exist (so the script found a server).
func NewCluster(t testing.TB, pkg string) *Cluster {
	t.Helper()
	URL(t, pkg)
	root := testenv.Root(t)
	start := exec.Command("bash", "-c", `. scripts/postgres-lib.sh && pg_start >&2 && env | grep -E '^(PG_|GRANTWIRE_TEST_POSTGRES=)'`)
	start.Dir = root
	out, err := start.Output()
	if err != nil {
		t.Fatalf("start a private PostgreSQL cluster: %v", err)
	}
	c := &Cluster{root: root}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case URLEnv:
			c.URL = v
		case "PG_TMP":
			c.dir = v
		}
		c.env = append(c.env, line)
	}
	if c.URL == "" || c.dir == "" {
		t.Fatalf("the private cluster did not say where it is: %q", out)
	}
	t.Cleanup(func() { _ = c.run("pg_stop") })
	return c
}

// Stop stops the server (fast shutdown: connections are closed); Start starts it again.
func (c *Cluster) Stop() error  { return c.run("pg_ctl_as stop") }
func (c *Cluster) Start() error { return c.run("pg_ctl_as start") }

func (c *Cluster) run(cmd string) error {
	sh := exec.Command("bash", "-c", ". scripts/postgres-lib.sh && "+cmd)
	sh.Env = append(os.Environ(), c.env...)
	sh.Dir = c.root
	out, err := sh.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", cmd, err, out)
	}
	return nil
}

// ServerLog is what the server logged so far.
func (c *Cluster) ServerLog() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
	return string(b)
}
