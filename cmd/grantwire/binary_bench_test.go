package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// BenchmarkBinaryGrantsList is `grants list` as the user feels it: the built binary,
// started as a process on an empty home, until it exits (engine start, OS shell, one
// operation, output). ns/op is the wall time of one command.
//
//	warm-cache: the compiled policy is in the user's cache directory (every run after the first)
//	floor-version: `grantwire --version`, the process alone (no engine, no OS shell)
//	cold-cache: an empty cache directory each time (the first run: compile, then store)
//
// GRANTWIRE_BENCH_BINARY runs another binary instead (an older build, for comparison).
//
//	go test ./cmd/grantwire -run '^$' -bench BinaryGrantsList -count 10 | go tool benchstat -
func BenchmarkBinaryGrantsList(b *testing.B) {
	bin := os.Getenv("GRANTWIRE_BENCH_BINARY")
	if bin == "" {
		bin = grantwireBinary(b)
	}
	home := b.TempDir()
	args := []string{"grants", "list"}
	var cpu time.Duration // the process's user + system CPU time, less sensitive to load than wall time
	run := func(b *testing.B, cache string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GRANTWIRE_HOME=" + filepath.Join(home, ".grantwire"), "XDG_CACHE_HOME=" + cache}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
	b.Run("warm-cache", func(b *testing.B) {
		cache := filepath.Join(home, "cache")
		run(b, cache)
		cpu = 0
		b.ReportAllocs()
		for b.Loop() {
			run(b, cache)
		}
		report(b)
	})
	// The floor: the same process printing its version, with no engine to start.
	b.Run("floor-version", func(b *testing.B) {
		args = []string{"--version"}
		defer func() { args = []string{"grants", "list"} }()
		cpu = 0
		b.ReportAllocs()
		for b.Loop() {
			run(b, filepath.Join(home, "cache"))
		}
		report(b)
	})
	b.Run("cold-cache", func(b *testing.B) {
		cpu = 0
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			b.StopTimer()
			cache := filepath.Join(home, "cold", strconv.Itoa(i))
			b.StartTimer()
			run(b, cache)
		}
		report(b)
	})
}

// BenchmarkBinaryToken is `grantwire token` as an agent's wrapper script feels it: the
// built binary on the real Secret Service, refreshing at the local authorization server
// on 127.0.0.1 (rotation on), until the process exits. ns/op is one command's wall time.
//
//	cached: the access token in the credential store is valid (every call within a
//	        token's lifetime after the first)
//	refreshing: tokens live 30 s, under the 60 s margin, so every call refreshes (the
//	        lock, the token request, the keyring writes)
//
// The refreshes/op metric counts token requests the server saw per command.
//
//	scripts/with-keyring.sh go test ./cmd/grantwire -run '^$' -bench BinaryToken -count 6
func BenchmarkBinaryToken(b *testing.B) {
	testenv.RequireKeyring(b, "./cmd/grantwire")
	bin := grantwireBinary(b)
	for _, bc := range []struct {
		name      string
		expiresIn int64
	}{{"cached", 3600}, {"refreshing", 30}} {
		b.Run(bc.name, func(b *testing.B) {
			const clientID = "bench-client"
			srv, err := authserver.Start(authserver.Config{ClientID: clientID, ClientSecret: "bench-secret", ExpiresIn: bc.expiresIn}, "")
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			home := b.TempDir()
			service := "grantwire.bench." + testenv.RandHex(4)
			defer func() { _ = gokeyring.DeleteAll(service) }()
			env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GRANTWIRE_HOME=" + filepath.Join(home, ".grantwire"),
				"XDG_CACHE_HOME=" + filepath.Join(home, "cache"), "GRANTWIRE_KEYRING_SERVICE=" + service,
				"GRANTWIRE_CATALOG=" + localGoogleCatalog(b, srv, home),
				"DBUS_SESSION_BUS_ADDRESS=" + os.Getenv("DBUS_SESSION_BUS_ADDRESS"), "XDG_RUNTIME_DIR=" + os.Getenv("XDG_RUNTIME_DIR")}
			run := func(stdin string, args ...string) {
				cmd := exec.Command(bin, args...)
				cmd.Env, cmd.Stdin = env, strings.NewReader(stdin)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v %v: %s", args, err, out)
				}
			}
			body, _ := json.Marshal(map[string]any{"client_id": clientID, "client_secret": "bench-secret",
				"refresh_token": srv.Issue([]string{gmailModify, gmailSend}), "scopes": []string{gmailModify, gmailSend}, "grant_agents": []string{"builtin:email"}})
			run(string(body), "import", "google", "--from-stdin")
			token := []string{"token", "google", "--agent", "builtin:email", "--scopes", gmailSend}
			run("", token...) // the first call refreshes (the import has no access token) and compiles the policy
			before := srv.Stats().Refreshes
			b.ReportAllocs()
			for b.Loop() {
				run("", token...)
			}
			b.ReportMetric(float64(srv.Stats().Refreshes-before)/float64(b.N), "refreshes/op")
			if st := srv.Stats(); st.ReuseDetected != 0 {
				b.Fatalf("%d refresh tokens reused", st.ReuseDetected)
			}
		})
	}
}
