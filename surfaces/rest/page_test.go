package rest_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// screenshotDir holds the screenshots of the browser test (git-ignored: build/).
const screenshotDir = "../../build/screenshots"

// chromium finds Chromium or Chrome: $GRANTWIRE_CHROMIUM, else on PATH. make test installs
// Debian's chromium when missing (scripts/chromium-lib.sh) and sets
// GRANTWIRE_REQUIRE_BROWSER=1, so a missing browser fails there instead of skipping.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("GRANTWIRE_CHROMIUM"), "chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("GRANTWIRE_REQUIRE_BROWSER") == "1" {
		t.Fatal("GRANTWIRE_REQUIRE_BROWSER=1 but no Chromium was found (scripts/chromium-lib.sh installs it)")
	}
	t.Skip("browser test: install chromium (apt-get install chromium) or run make test, which does")
	return ""
}

// The Settings → Connectors page in a real headless Chromium, against the real binary, the
// real keyring and the local authorization server: configure Google's client in the page,
// connect through the real PKCE flow, grant a scope to an agent, activate an MCP server,
// and watch an activation and a grant made by the CLI in another process appear without a
// reload; then the page at 375 px. Screenshots of every step go to build/screenshots.
func TestPageInARealBrowser(t *testing.T) {
	exe := chromium(t)
	w := newWorld(t)
	w.auth.Configure(func(c *authserver.Config) { c.DeviceInterval, c.DeviceExpiresIn = 1, 120 })
	s := w.serve()
	require.NoError(t, os.MkdirAll(screenshotDir, 0o755))

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-popup-blocking", true), chromedp.Flag("disable-gpu", true),
		chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	// Everything the page loads must come from the server itself; no script may throw.
	var mu sync.Mutex
	var requests, exceptions []string
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, e.Request.URL)
		case network.EventRequestWillBeSent:
			requests = append(requests, e.Request.URL)
		case *runtime.EventExceptionThrown:
			exceptions = append(exceptions, e.ExceptionDetails.Text+" "+exceptionText(e))
		case runtime.EventExceptionThrown:
			exceptions = append(exceptions, e.ExceptionDetails.Text+" "+exceptionText(&e))
		}
	}))
	shot := func(name string) {
		t.Helper()
		// The authorization's window may have come to the front: a screenshot of a tab in
		// the background never finishes.
		_, err := chromedp.Call(ctx, page.BringToFront, cdp.Empty{})
		require.NoError(t, err)
		var buf []byte
		buf, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(screenshotDir, name), buf, 0o644))
	}
	tile := func(id string) string { return `[data-connector="` + id + `"]` }
	// shotTile saves one tile, at the size a person reads it.
	shotTile := func(name, id string) {
		t.Helper()
		_, err := chromedp.Call(ctx, page.BringToFront, cdp.Empty{})
		require.NoError(t, err)
		buf, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(tile(id))))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(screenshotDir, name), buf, 0o644))
	}
	// click clicks an element, again when a live update replaced it between finding it and
	// clicking it ("Could not find node with given id").
	click := func(sel string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				shot("failure.png")
				t.Fatalf("click %s: %v", sel, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// read evaluates a JavaScript expression over the element sel (as el) in the page:
	// no DOM node id is held, so a live update between finding and reading cannot fail it.
	read := func(sel, expr string) (string, error) {
		return chromedp.Run(ctx, chromedp.Evaluate[string](`((el) => el ? String(`+expr+`) : "")(document.querySelector(`+jsString(sel)+`))`))
	}
	waitText := func(sel, want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+jsString(sel)+`)||{}).textContent||""`))
			if strings.Contains(got, want) {
				return
			}
			if time.Now().After(deadline) {
				shot("failure.png")
				t.Fatalf("%s never showed %q (shows %q)", sel, want, got)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// 1. The page, live.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.url), chromedp.WaitVisible(chromedp.CSS(tile("google")))))
	waitText("#live", "live")
	shot("01-page.png")

	// 2. Google's OAuth client, typed into the page (the secret field is a password field).
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(tile("google")+` details[data-panel="configure"] summary`)),
		chromedp.SendKeys(chromedp.CSS("#cfg-google-client_id"), "web-client"),
		chromedp.SendKeys(chromedp.CSS("#cfg-google-client_secret"), w.secrets[0]),
		chromedp.Click(chromedp.CSS(tile("google")+` form.configure button[type="submit"]`)),
	))
	waitText(tile("google")+" .note", "Saved to the credential store")
	typ, err := read("#cfg-google-client_secret", "el.getAttribute(\"type\")")
	require.NoError(t, err)
	require.Equal(t, "password", typ)
	shot("02-client-configured.png")
	shotTile("02-tile.png", "google")

	// 2b. "Use a code instead" (the device flow): the tile shows the code, the link and a
	// countdown; Cancel ends it (nothing stored); again, and the user approves the code on
	// another device: the tile turns connected by itself; then disconnect.
	click("#device-google")
	waitText("#countdown-google", "the code works for")
	left, err := read("#countdown-google", "el.innerText")
	require.NoError(t, err)
	require.Regexp(t, `works for (2:00|1:[0-5]\d)$`, left, "the code's 120 s, counting down")
	userCode, err := read("#code-google", "el.innerText")
	require.NoError(t, err)
	require.Regexp(t, `^[A-Z]{4}-[A-Z]{4}$`, userCode)
	href, err := read("#verify-google", "el.getAttribute(\"href\")")
	require.NoError(t, err)
	require.Equal(t, w.auth.VerificationURL(), href)
	shot("02b-device-code.png")
	shotTile("02b-tile.png", "google")
	click("#cancel-google")
	waitText(tile("google")+" .note", "cancelled")
	click("#device-google")
	waitText("#countdown-google", "the code works for")
	userCode, err = read("#code-google", "el.innerText")
	require.NoError(t, err)
	require.True(t, w.auth.Approve(userCode))
	waitText(tile("google")+" .state", "Connected as ada@example.com")
	shotTile("02c-device-connected.png", "google")
	click("#disconnect-google")
	waitText(tile("google")+" .state", "Not connected")

	// 3. Connect: the page opens the authorization in a new window; the local server
	// consents and redirects to grantwire's loopback; the tile turns connected by itself.
	click("#connect-google")
	waitText(tile("google")+" .state", "Connected as ada@example.com")
	shot("03-connected.png")
	shotTile("03-tile.png", "google")

	// 4. Grant builtin:email the Gmail read scope with a checkbox.
	scope := `input[data-scope="` + gmail + `"]`
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(tile("google")+` details[data-panel="grants"] summary`)),
		chromedp.Click(chromedp.CSS(tile("google")+` [data-agent="builtin:email"] `+scope)),
	))
	waitFor(t, func() bool {
		out, code := w.cli("", "grants", "list", "google", "--json")
		return code == 0 && strings.Contains(out, `"builtin:email"`) && strings.Contains(out, gmail)
	})
	waitText(tile("google")+` details[data-panel="grants"] summary`, "Agent access (1)")
	shot("04-granted.png")
	shotTile("04-tile.png", "google")

	// 4b. Reconnect: the connection must now also hold what the agent is granted; the page
	// asks again with the scopes the policy names (held or granted), through the real flow.
	click("#connect-google")
	waitText(tile("google")+" .scopes", "gmail.readonly")
	waitText(tile("google")+" .note", "Connected as ada@example.com")

	// 5. Activate the memory MCP server for the chat agent ("Active for").
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(tile("mcp-memory")+` details[data-panel="active"] summary`)),
		chromedp.Click(chromedp.CSS("#act-mcp-memory-builtin_chat")),
	))
	waitFor(t, func() bool {
		out, code := w.cli("", "activations", "list", "mcp-memory", "--json")
		return code == 0 && strings.Contains(out, `"builtin:chat"`)
	})
	waitText(tile("mcp-memory")+` details[data-panel="active"] summary`, "Active for (1)")
	shot("05-activated.png")
	shotTile("05-tile.png", "mcp-memory")

	// 5b. Narrow the chat agent to two of the server's tools (its tool rule), in the page.
	waitText("#rule-mcp-memory-builtin_chat", "Tools: every tool")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#tools-mcp-memory-builtin_chat"), "read_graph, search_nodes"),
		chromedp.Click(chromedp.CSS("#settools-mcp-memory-builtin_chat")),
	))
	waitFor(t, func() bool {
		out, code := w.cli("", "activations", "list", "mcp-memory", "--json")
		var doc struct {
			Activations []struct {
				Agent string   `json:"agent"`
				Tools []string `json:"tools"`
			} `json:"activations"`
		}
		return code == 0 && json.Unmarshal([]byte(out), &doc) == nil && len(doc.Activations) == 1 &&
			strings.Join(doc.Activations[0].Tools, ",") == "read_graph,search_nodes"
	})
	waitText("#rule-mcp-memory-builtin_chat", "Tools: read_graph, search_nodes")
	shotTile("05b-tools.png", "mcp-memory")

	// 6. The CLI, in another process, activates mcp-git for the chat agent: the open page
	// shows it without a reload.
	click(tile("mcp-git") + ` details[data-panel="active"] summary`)
	navigations, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.timeOrigin`))
	require.NoError(t, err)
	out, code := w.cli("", "activations", "activate", "mcp-git", "builtin:chat")
	require.Equal(t, 0, code, out)
	cliDone := time.Now()
	waitFor(t, func() bool {
		on, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(document.getElementById("act-mcp-git-builtin_chat")||{}).checked`))
		return on
	})
	t.Logf("the CLI's activation showed in the page %s after the CLI exited", time.Since(cliDone).Round(time.Millisecond))
	require.Less(t, time.Since(cliDone), 2*time.Second)
	again, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.timeOrigin`))
	require.NoError(t, err)
	require.Equal(t, navigations, again, "the page was not reloaded")
	shot("06-cli-change.png")
	shotTile("06-tile.png", "mcp-git")

	// 6b. The CLI, in another process, grants the calendar agent openid on google (a grant
	// alone, no activation): the open page's grant editor shows it without a reload.
	out, code = w.cli("", "grants", "grant", "google", "builtin:calendar", "--scopes", "openid")
	require.Equal(t, 0, code, out)
	cliDone = time.Now()
	waitText(tile("google")+` details[data-panel="grants"] summary`, "Agent access (2)")
	waitFor(t, func() bool {
		on, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(document.querySelector(`+jsString(tile("google")+` [data-agent="builtin:calendar"] input[data-scope="openid"]`)+`)||{}).checked`))
		return on
	})
	t.Logf("the CLI's grant showed in the page %s after the CLI exited", time.Since(cliDone).Round(time.Millisecond))
	require.Less(t, time.Since(cliDone), 2*time.Second)
	again, err = chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.timeOrigin`))
	require.NoError(t, err)
	require.Equal(t, navigations, again, "the page was not reloaded")
	shot("06b-cli-grant.png")
	shotTile("06b-tile.png", "google")

	// 7. An error shows its message and its fix: test a connector that is not configured.
	require.NoError(t, chromedp.Do(ctx, chromedp.Focus(chromedp.CSS("#test-mcp-github")), chromedp.KeyEvent("\r")))
	waitText(tile("mcp-github")+" .note", "Fix: grantwire configure mcp-github")
	shot("07-error-with-fix.png")
	shotTile("07-tile.png", "mcp-github")

	// 8. 375 px wide: nothing scrolls sideways.
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(375, 812)))
	time.Sleep(200 * time.Millisecond)
	scrollWidth, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	require.NoError(t, err)
	require.LessOrEqual(t, scrollWidth, 375, "the page is wider than the screen")
	shot("08-375px-full.png")
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`window.scrollTo(0, 0), true`))
	require.NoError(t, err)
	top, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(screenshotDir, "08-375px.png"), top, 0o644))

	// 9. A revoke that could not clean a ledger says so, with the command that moves the
	// ledger aside (the activations ledger is unreadable; the grant is revoked all the same).
	ledger := w.ledger("activations.json")
	require.NoError(t, os.WriteFile(ledger, []byte(`{"activations": {`), 0o600))
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector(`+jsString(tile("google")+` details[data-panel="grants"]`)+`)||{}).open = true`))
	require.NoError(t, err)
	click("#revoke-google-builtin_calendar")
	waitText(tile("google")+" .note", "mv "+ledger+" "+ledger+".corrupt")
	shotTile("09-revoke-warning.png", "google")
	require.NoError(t, os.Remove(ledger))

	// 10. Connections kept healthy: serve's health pass refreshes an access token five
	// minutes before it expires, so a connection whose tokens last 302 s is due 2 s after
	// it is made. The provider fails (503): the tile says so, with the fixing command.
	// Reconnected (its failures start afresh), the provider answers invalid_grant: the
	// connection is cleared and the tile says it was revoked at the provider.
	w.auth.Configure(func(c *authserver.Config) { c.ExpiresIn = 302 })
	w.auth.Script(authserver.Failure{Grant: "refresh_token", Status: 503, Error: "temporarily_unavailable"})
	click("#connect-google")
	waitText(tile("google")+` [data-health="failing"]`, "Provider failing (1 failure, temporarily_unavailable)")
	waitText(tile("google")+` [data-health="failing"]`, "Fix: grantwire connect google --scopes")
	shotTile("10-health-failing.png", "google")
	w.auth.Script(authserver.Failure{Grant: "refresh_token", Error: "invalid_grant"})
	click("#connect-google")
	waitText(tile("google")+` [data-health="revoked"]`, "Revoked at the provider")
	waitText(tile("google")+` [data-health="revoked"]`, "Fix: grantwire connect google --scopes")
	waitText(tile("google")+" .state", "Not connected")
	shotTile("10b-health-revoked.png", "google")
	// The pass's record is stored: REST lists it, and a page loaded afresh shows it.
	var listed struct {
		Connectors []struct {
			ID     string         `json:"id"`
			Health map[string]any `json:"health"`
		} `json:"connectors"`
	}
	require.NoError(t, json.Unmarshal(w.do(req{method: "GET", path: "/api/connectors"}).body, &listed))
	for _, c := range listed.Connectors {
		if c.ID == "google" {
			require.Equal(t, "revoked", c.Health["state"], "GET /api/connectors: google's stored health")
			require.Contains(t, c.Health["fix"], "grantwire connect google --scopes")
		} else {
			require.Nil(t, c.Health, "GET /api/connectors: %s has no stored health", c.ID)
		}
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.url), chromedp.WaitVisible(chromedp.CSS(tile("google")))))
	waitText(tile("google")+` [data-health="revoked"]`, "Revoked at the provider")
	waitText(tile("google")+` [data-health="revoked"]`, "Fix: grantwire connect google --scopes")
	shotTile("10c-health-after-reload.png", "google")

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, exceptions, "the page threw")
	for _, u := range requests {
		require.True(t, strings.HasPrefix(u, s.url+"/") || u == s.url || strings.HasPrefix(u, "about:") || strings.HasPrefix(u, "data:"),
			"the page loaded %s, which is not the server's", u)
	}
	b, _ := json.Marshal(requests)
	w.record(b)
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func exceptionText(e *runtime.EventExceptionThrown) string {
	if e.ExceptionDetails.Exception != nil {
		return e.ExceptionDetails.Exception.Description
	}
	return ""
}
