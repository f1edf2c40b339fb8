// Package fixes owns the list of the kinds of fix grantwire prints — the `fix` of the
// policy's errors, the commands its warnings name, and the CLI's own (`see: … --help`, the
// OPA build) — as patterns, so that tests can require that every fix they see is of a kind
// cmd/grantwire's TestEveryFixRuns runs. It also records the fixes a test process saw.
//
// Nothing in grantwire's product imports it; conformance (every fix the corpus produces)
// and cmd/grantwire (every fix the CLI tests print, and the runs) do.
package fixes

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Kind is a kind of fix: every fix it matches is the same command up to its ids, scopes,
// paths and placeholders.
type Kind struct {
	Name    string
	Pattern *regexp.Regexp
	// Unrunnable, when set, says why no test runs fixes of this kind.
	Unrunnable string
}

func kind(name, pattern string) Kind {
	return Kind{Name: name, Pattern: regexp.MustCompile(`^` + pattern + `$`)}
}

// A word of a command: a plain word (a <placeholder> is not one), or a single-quoted one
// (scopes.quote).
const word = `(?:[^\s'<>]+|'(?:[^']|'\\'')*')`

// Kinds is every kind of fix grantwire prints.
var Kinds = []Kind{
	kind("help", `grantwire(?: [a-z][a-z-]*)* --help`), // first: "--help" is a word too
	kind("grants-grant", `grantwire grants grant `+word+` `+word+` --scopes `+word),
	kind("connect", `grantwire connect `+word+`(?: --scopes `+word+`)?(?: --grant-agent `+word+`)*`),
	kind("connect-no-browser", `grantwire connect `+word+`(?: --scopes `+word+`)?(?: --grant-agent `+word+`)* --no-browser`),
	kind("connect-device", `grantwire connect `+word+`(?: --scopes `+word+`)?(?: --grant-agent `+word+`)* --device`),
	kind("connect-with-scopes-for-agents", `grantwire connect `+word+` --scopes <scopes>(?: --grant-agent `+word+`)+`),
	kind("configure-client", `grantwire configure `+word+` --client-id <id>`),
	kind("configure-client-with-secret", `grantwire configure `+word+` --client-id <id> --client-secret-stdin`),
	kind("configure-mcp", `grantwire configure `+word),
	kind("configure-mcp-from-stdin", `grantwire configure `+word+` --from-stdin`),
	kind("configure-mcp-set-from-stdin", `grantwire configure `+word+`(?: --set `+word+`)+ --from-stdin`),
	kind("activate", `grantwire activations activate `+word+` `+word),
	kind("activate-with-scopes", `grantwire activations activate `+word+` `+word+` --scopes use`),
	kind("activate-tools", `grantwire activations activate `+word+` `+word+` --tools `+word),
	kind("activate-all-tools", `grantwire activations activate `+word+` `+word+` --all-tools`),
	kind("catalog", `grantwire catalog`),
	kind("catalog-entry", `grantwire catalog `+word),
	// ISSUER_MISMATCH with a user's catalog file: write the issuer the server names into it.
	kind("catalog-set", `grantwire --catalog `+word+` catalog set `+word+`(?: [a-z_]+=`+word+`)+`),
	kind("agents-list", `grantwire agents list`),
	kind("import-from-stdin", `grantwire import `+word+` --from-stdin`),
	kind("mcp-list", `grantwire mcp list`),
	kind("mcp-add", `grantwire mcp add `+word+` --url <url>`),
	kind("mcp-auth", `grantwire mcp auth `+word+`(?: --scopes `+word+`)?(?: --no-browser)?`),
	kind("mcp-logout", `grantwire mcp logout `+word),
	kind("mcp-run", `grantwire mcp run `+word+` --agent `+word),
	kind("mcp-add-url", `grantwire mcp add `+word+` --url `+word),
	kind("mcp-add-client", `grantwire mcp add `+word+` --url `+word+` --client-id <id> --issuer `+word+` --client-secret-stdin`),
	// A machine grant whose pre-registered client the credential store lost: add it again.
	kind("mcp-add-machine-client", `grantwire mcp add `+word+` --url `+word+` --grant (?:client-credentials|jwt-bearer|id-jag) --client-id <id> --issuer `+word+
		`(?: --idp-token-endpoint `+word+`(?: --idp-client-id `+word+`)?)? --(?:client-secret|assertion)-stdin`),
	kind("move-aside", `mv `+word+` `+word),
	kind("opa-build", `go build -tags opa -o grantwire \./cmd/grantwire`),
	kind("bundle", `build the bundle with grantwire policy build -o FILE, or run without --bundle`),
	// CORRUPT_LEDGER of a PostgreSQL store's ledger (a row): what move-aside is for a file.
	kind("store-move-aside", `grantwire store move-aside(?: --store-home `+word+`)? `+word),
	// STORE_UNAVAILABLE: the command that checks the PostgreSQL store's server.
	kind("store-check", `pg_isready -h `+word+` -p [0-9]+`),
	// INSECURE_STORE of a locked keyring: unlock the running gnome-keyring (password on stdin).
	kind("keyring-unlock", `grantwire keyring unlock`),
	// INSECURE_STORE with no Secret Service: a private one for the shell, from a checkout.
	kind("keyring-session", `eval "\$\(scripts/keyring-session\.sh start\)"`),
	{
		Name: "credential-store",
		Pattern: regexp.MustCompile(`^(?:install and (?:start|unlock) a Secret Service|unlock the (?:login keyring|login Keychain|keyring)|` +
			`run grantwire (?:in a logged-in|as a logged-in|on macOS))`),
		Unrunnable: "it sets up macOS's or Windows's credential store (a logged-in session, a Keychain to unlock) or " +
			"answers a keyring that does not answer in time (a password prompt somebody must answer): the tests run " +
			"on Linux, where a locked keyring (keyring-unlock) and a missing Secret Service (keyring-session) have " +
			"fixes that TestEveryFixRuns runs",
	},
	{
		Name:    "opa-server",
		Pattern: regexp.MustCompile(`^start an OPA server on grantwire's bundle \(docs/fleet\.md\), or drop --engine opa-server`),
		Unrunnable: "it starts a service the team operates (docs/fleet.md): core/opaserver's and conformance's " +
			"TestOPAServer start the pinned OPA on the bundle as that page says, and cmd/grantwire's " +
			"TestOPAServerEngine checks the command decides through it",
	},
}

// Match returns the kind of a fix (false when it is of no known kind). A move-aside fix
// must move a file to the same path with ".corrupt" appended.
func Match(fix string) (Kind, bool) {
	for _, k := range Kinds {
		if !k.Pattern.MatchString(fix) {
			continue
		}
		if k.Name == "move-aside" {
			w := Words(fix)
			if len(w) != 3 || w[2] != w[1]+".corrupt" {
				continue
			}
		}
		return k, true
	}
	return Kind{}, false
}

// Words splits a command as a POSIX shell does for the words fixes hold: plain words and
// single-quoted words (a quote inside is written '\”).
func Words(cmd string) []string {
	var out []string
	var b strings.Builder
	in, started := false, false
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case in && c == '\'':
			in = false
		case in:
			b.WriteByte(c)
		case c == '\'':
			in, started = true, true
		case c == '\\' && i+1 < len(cmd):
			i++
			b.WriteByte(cmd[i])
			started = true
		case c == ' ' || c == '\t':
			if started {
				out = append(out, b.String())
				b.Reset()
				started = false
			}
		default:
			b.WriteByte(c)
			started = true
		}
	}
	if started {
		out = append(out, b.String())
	}
	return out
}

// commandIn finds the commands a warning names: after "(" or ": ", a grantwire or mv
// command up to the next ";", "(" or ")".
var commandIn = regexp.MustCompile(`(?:^|\(|: )((?:grantwire|mv) [^;()]*[^;() .])`)

// Commands returns the commands a warning or a message names.
func Commands(text string) []string {
	var out []string
	for _, m := range commandIn.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

var (
	fixLine     = regexp.MustCompile(`(?m)^(?:fix|see): (.+)$`)
	fixJSON     = regexp.MustCompile(`"fix":\s*("(?:[^"\\]|\\.)*")`)
	warningLine = regexp.MustCompile(`(?m)^grantwire: warning: (.+)$`)
	warningJSON = regexp.MustCompile(`\{"warning":\{"message":("(?:[^"\\]|\\.)*")\}\}`)
)

// Printed returns the fixes a CLI printed (its stdout and stderr): `fix:` and `see:`
// lines, "fix" members of JSON errors, and the commands its warnings name.
func Printed(out string) []string {
	var fixes []string
	for _, m := range fixLine.FindAllStringSubmatch(out, -1) {
		fixes = append(fixes, m[1])
	}
	for _, m := range fixJSON.FindAllStringSubmatch(out, -1) {
		var s string
		if json.Unmarshal([]byte(m[1]), &s) == nil && s != "" {
			fixes = append(fixes, s)
		}
	}
	for _, m := range warningLine.FindAllStringSubmatch(out, -1) {
		fixes = append(fixes, Commands(m[1])...)
	}
	for _, m := range warningJSON.FindAllStringSubmatch(out, -1) {
		var s string
		if json.Unmarshal([]byte(m[1]), &s) == nil {
			fixes = append(fixes, Commands(s)...)
		}
	}
	return fixes
}

var (
	mu       sync.Mutex
	recorded = map[string]string{} // fix → where it was seen first
)

// Record records the fixes a CLI printed (see Printed); where says which test saw them.
func Record(where, out string) {
	mu.Lock()
	defer mu.Unlock()
	for _, f := range Printed(out) {
		if _, ok := recorded[f]; !ok {
			recorded[f] = where
		}
	}
}

// Unknown returns every recorded fix of no known kind, with where it was seen, sorted.
func Unknown() []string {
	mu.Lock()
	defer mu.Unlock()
	var out []string
	for f, where := range recorded {
		if _, ok := Match(f); !ok {
			out = append(out, f+"   (printed in "+where+")")
		}
	}
	sort.Strings(out)
	return out
}

// Recorded returns how many distinct fixes were recorded, by kind name.
func Recorded() map[string]int {
	mu.Lock()
	defer mu.Unlock()
	out := map[string]int{}
	for f := range recorded {
		if k, ok := Match(f); ok {
			out[k.Name]++
		}
	}
	return out
}
