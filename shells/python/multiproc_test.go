package python_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/grantwire/grantwire/catalog"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/shells/native"
)

// TestPythonLocksInteroperate takes a provider's lock with the Go shell's own code
// (shells/native: the service lock, then the home's) and demands that a Python process finds
// it busy at the same paths, then held once Go released it; and the other way round.
func TestPythonLocksInteroperate(t *testing.T) {
	e := setup(t)
	home, lockDir := t.TempDir(), t.TempDir()
	sh, err := native.New(native.Options{Home: home, Service: "grantwire.lock-test", LockDir: lockDir, NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	locks := sh.Capabilities().Locks
	env := []string{"GRANTWIRE_HOME=" + home, "GRANTWIRE_LOCK_DIR=" + lockDir, "GRANTWIRE_KEYRING_SERVICE=grantwire.lock-test"}
	probe := `import sys, json
from grantwire import _os
s = _os.Shell(interactive=False)
print(json.dumps(s.locks.paths("google"), separators=(",", ":")))
r = s.locks.try_lock("google", float(sys.argv[1]) if len(sys.argv) > 1 else 0.3, None)
print("held" if r else "busy")
`
	release, err := locks.TryLock(context.Background(), "google", 0)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Split(strings.TrimSpace(pyRun(t, e, env, "", probe)), "\n")
	want, _ := json.Marshal([]string{sh.ServiceLockPath("google"), sh.LockPath("google")})
	if out[0] != string(want) {
		t.Errorf("Python takes the locks %s, Go %s", out[0], want)
	}
	if out[1] != "busy" {
		t.Errorf("while Go holds the lock, Python answered %q", out[1])
	}
	release()
	if got := strings.Split(strings.TrimSpace(pyRun(t, e, env, "", probe)), "\n")[1]; got != "held" {
		t.Errorf("after Go released the lock, Python answered %q", got)
	}
	// Python holds it (until its stdin closes); Go finds it busy, then takes it.
	cmd := exec.Command(e.python, "-c", `import sys
from grantwire import _os
r = _os.Shell(interactive=False).locks.try_lock("google", 5, None)
print("held" if r else "busy", flush=True)
sys.stdin.read()
`)
	cmd.Env = append(os.Environ(), env...)
	stdin, _ := cmd.StdinPipe()
	if line := testenv.FirstLine(t, cmd); line != "held" {
		t.Fatalf("Python did not take the lock: %q", line)
	}
	if _, err := locks.TryLock(context.Background(), "google", 200*time.Millisecond); err == nil {
		t.Error("Go took the lock while a Python process held it")
	}
	stdin.Close()
	_ = cmd.Wait()
	r, err := locks.TryLock(context.Background(), "google", 2*time.Second)
	if err != nil {
		t.Fatalf("Go could not take the lock once Python exited: %v", err)
	}
	r()
}

const gmail = "https://www.googleapis.com/auth/gmail.readonly"

// world is one home shared by Go and Python processes: a catalog whose google entry points at
// a local authorization server, a keyring service of its own, one lock directory.
type world struct {
	env                       []string
	home                      string
	lockDir, service, catalog string
	server                    *exec.Cmd
	stderr                    testenv.Buffer // the authorization server's, written while it runs
}

func newWorld(t *testing.T, e *pyenv, serverArgs ...string) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{home: filepath.Join(dir, "home")}
	w.server = exec.Command(e.authserver, append([]string{"-client-id", "race-client", "-client-secret", "race-secret"}, serverArgs...)...)
	w.server.Stderr = &w.stderr
	line := testenv.FirstLine(t, w.server)
	t.Cleanup(func() { _ = w.server.Process.Kill(); _ = w.server.Wait() })
	var ep map[string]string
	if err := json.Unmarshal([]byte(line), &ep); err != nil {
		t.Fatalf("authserver printed %q", line)
	}
	var cat struct {
		Connectors map[string]map[string]any `json:"connectors"`
	}
	raw, err := os.ReadFile(filepath.Join(e.repo, "catalog", "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &cat); err != nil {
		t.Fatal(err)
	}
	g := cat.Connectors["google"]
	for field, path := range map[string]string{"authorization_url": "/authorize", "token_url": "/token", "userinfo_url": "/userinfo",
		"revocation_url": "/revoke", "device_authorization_url": "/devicecode"} {
		g[field] = ep["issuer"] + path
	}
	g["issuer"] = ep["issuer"]
	b, _ := json.Marshal(cat)
	catalog := filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(catalog, b, 0o600); err != nil {
		t.Fatal(err)
	}
	w.lockDir, w.service, w.catalog = filepath.Join(dir, "locks"), "grantwire.race."+testenv.RandHex(4), catalog
	w.env = []string{"GRANTWIRE_HOME=" + w.home, "GRANTWIRE_CATALOG=" + catalog, "GRANTWIRE_LOCK_DIR=" + w.lockDir,
		"GRANTWIRE_KEYRING_SERVICE=" + w.service, "BROWSER=" + e.browser}
	return w
}

// stats stops the authorization server and reads what it counted.
func (w *world) stats(t *testing.T) map[string]int {
	t.Helper()
	_ = w.server.Process.Signal(syscall.SIGTERM)
	_ = w.server.Wait()
	text := w.stderr.String()
	out := map[string]int{}
	for _, m := range regexp.MustCompile(`(\d+) ([a-z_ ]+?)(?:,|$| detected)`).FindAllStringSubmatch(text, -1) {
		out[strings.TrimSpace(m[2])] = atoi(m[1])
	}
	if len(out) == 0 {
		t.Fatalf("the authorization server printed no counts: %q", text)
	}
	return out
}

func (w *world) cli(t *testing.T, e *pyenv, stdin string, args ...string) (string, error) {
	cmd := exec.Command(e.cli, args...)
	cmd.Env = append(os.Environ(), w.env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestOneHomeTwoLanguages runs Go CLI processes, a long-lived Go client (this test's process,
// with the OS shell's keyring cache on) and Python processes at once on one home and one
// keyring service (the private Secret Service), refreshing one connection at the local
// authorization server while it rotates refresh tokens, detects reuse and issues access tokens
// that last one second (so every hand-out refreshes, under the provider's lock shared by both
// languages), and granting agents into one grants.json. 0 reuse at the server, 0 invalid_grant,
// every hand-out answered, every grant kept.
func TestOneHomeTwoLanguages(t *testing.T) {
	testenv.RequireKeyring(t, "./shells/python")
	e := setup(t)
	w := newWorld(t, e, "-expires-in", "1")
	if out, err := w.cli(t, e, "race-secret\n", "configure", "google", "--client-id", "race-client", "--client-secret-stdin"); err != nil {
		t.Fatalf("configure: %v\n%s", err, out)
	}
	if out, err := w.cli(t, e, "", "connect", "google", "--scopes", "openid,"+gmail, "--grant-agent", "builtin:email", "--timeout", "60s"); err != nil {
		t.Fatalf("connect: %v\n%s", err, out)
	}
	const goWorkers, pyWorkers, rounds = 2, 2, 5
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	tokens := make(chan int, 100)
	// A long-lived Go client: its cached keyring values are good only while every writer,
	// Python's too, bumps the service's generation files.
	ctx := context.Background()
	client, err := grantwire.Open(ctx, native.Options{Home: w.home, Service: w.service, LockDir: w.lockDir, NoWatch: true, Prompt: io.Discard},
		grantwire.WithCatalog(catalog.File(w.catalog)))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range rounds * 2 {
			if _, err := client.GetAccessToken(ctx, "google", []string{gmail}, "builtin:email"); err != nil {
				errs <- fmt.Sprintf("go client: %v", err)
			} else {
				tokens <- 1
			}
			time.Sleep(150 * time.Millisecond)
		}
	}()
	for i := range goWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range rounds {
				if out, err := w.cli(t, e, "", "token", "google", "--agent", "builtin:email", "--scopes", gmail); err != nil {
					errs <- fmt.Sprintf("go token: %v: %s", err, out)
				} else {
					tokens <- 1
				}
				if out, err := w.cli(t, e, "", "grants", "grant", "google", fmt.Sprintf("installed:go-%d-%d", i, k), "--scopes", gmail); err != nil {
					errs <- fmt.Sprintf("go grant: %v: %s", err, out)
				}
			}
		}()
	}
	for i := range pyWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(e.python, "-c", fmt.Sprintf(`import grantwire, sys, time
G = %q
for k in range(%d):
    t = grantwire.get_access_token_sync(provider="google", scopes=[G], agent_id="builtin:email")
    assert t, "no token"
    print("token", flush=True)
    grantwire.grant_agent("google", "installed:py-%d-%%d" %% k, [G])
    time.sleep(0.2)
`, gmail, rounds*2, i))
			cmd.Env = append(os.Environ(), w.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				errs <- fmt.Sprintf("python: %v: %s", err, out)
			}
			tokens <- strings.Count(string(out), "token\n")
		}()
	}
	wg.Wait()
	close(errs)
	close(tokens)
	for e := range errs {
		t.Error(e)
	}
	handed := 0
	for n := range tokens {
		handed += n
	}
	// Every grant is kept, from both languages, and the connection still works in both.
	raw, err := os.ReadFile(filepath.Join(w.home, "connectors", "grants.json"))
	if err != nil {
		t.Fatal(err)
	}
	var grants map[string]map[string][]string
	if err := json.Unmarshal(raw, &grants); err != nil {
		t.Fatal(err)
	}
	want := 1 + goWorkers*rounds + pyWorkers*rounds*2
	if len(grants["google"]) != want {
		t.Errorf("grants.json holds %d grants on google, want %d (lost grants): %s", len(grants["google"]), want, raw)
	}
	if out, err := w.cli(t, e, "", "token", "google", "--agent", "builtin:email", "--scopes", gmail); err != nil {
		t.Errorf("after the race the Go CLI gets no token: %v\n%s", err, out)
	}
	pyRun(t, e, w.env, "", fmt.Sprintf(`import grantwire; assert grantwire.get_access_token_sync(provider="google", scopes=[%q], agent_id="builtin:email")`, gmail))
	st := w.stats(t)
	if st["reuses"] != 0 || st["invalid_grant"] != 0 {
		t.Errorf("the authorization server saw %d refresh-token reuses and %d invalid_grant: %v", st["reuses"], st["invalid_grant"], st)
	}
	if st["refreshes"] < handed/2 {
		t.Errorf("only %d refreshes for %d hand-outs of one-second tokens: the race did not race", st["refreshes"], handed)
	}
	t.Logf("Go and Python on one home: %d hand-outs (%d Go CLI processes, a Go client, %d Python processes), %d refreshes at the rotating server, %d reuses, %d invalid_grant, %d grants kept",
		handed+2, goWorkers*rounds+1, pyWorkers+1, st["refreshes"], st["reuses"], st["invalid_grant"], len(grants["google"]))
}
