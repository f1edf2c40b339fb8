package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// fieldName is what an unknown field must look like to be named in an error.
var fieldName = regexp.MustCompile(`^"[a-z][a-z_]{0,31}"$`)

var forwardedKeys = []string{"client_id", "client_secret", "refresh_token", "scopes", "account_email", "account_type", "grant_agents"}

// parseForwarded reads a JSON object or KEY=VALUE lines (scopes and grant_agents separated
// by spaces or commas). Errors name known fields and byte offsets, never values, nor a
// field name that is not one of forwardedKeys (a secret pasted in a key's place). The JSON
// must be strict (jsonx.Check): a duplicated refresh_token or invalid UTF-8 in a
// secret would otherwise be silently resolved by encoding/json.
func parseForwarded(b []byte, source string) (grantwire.Forwarded, error) {
	var in grantwire.Forwarded
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		if err := jsonx.Check(t); err != nil {
			var se *jsonx.Error
			if errors.As(err, &se) && se.Key != "" && !slices.Contains(forwardedKeys, se.Key) {
				se.Key = "" // not a field name: it may be a secret
				se.Reason = "a duplicated name that is not a known field"
			}
			return in, usagef("%s: not valid JSON (%v)", source, err)
		}
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			var se *json.SyntaxError
			var te *json.UnmarshalTypeError
			switch {
			case errors.As(err, &se):
				return in, usagef("%s: not valid JSON (at byte %d)", source, se.Offset)
			case errors.As(err, &te) && slices.Contains(forwardedKeys, te.Field):
				return in, usagef("%s: %q has the wrong type (want %s)", source, te.Field, te.Type)
			default:
				// An unknown field (json: unknown field "x"): named only when it looks like
				// a field name.
				f, unknown := strings.CutPrefix(err.Error(), "json: unknown field ")
				if !unknown {
					return in, usagef("%s: not a forwarded connection (a JSON object of %s)", source, strings.Join(forwardedKeys, ", "))
				}
				field := "a field"
				if fieldName.MatchString(f) {
					field = "the field " + f
				}
				return in, usagef("%s: %s is not one of the known fields (%s)", source, field, strings.Join(forwardedKeys, ", "))
			}
		}
		return in, nil
	}
	kv, _, err := parseKeyValues(b, source, forwardedKeys, "a forwarded connection")
	if err != nil {
		return in, err
	}
	for k, v := range kv {
		switch k {
		case "client_id":
			in.ClientID = strings.TrimSpace(v)
		case "client_secret":
			in.ClientSecret = v
		case "refresh_token":
			in.RefreshToken = v
		case "account_email":
			in.AccountEmail = strings.TrimSpace(v)
		case "account_type":
			in.AccountType = strings.TrimSpace(v)
		case "scopes":
			in.Scopes = splitList(v)
		case "grant_agents":
			in.GrantAgents = splitList(v)
		}
	}
	return in, nil
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
}

func (a *app) importCmd() *cobra.Command {
	var (
		fromStdin                                   bool
		fromFile, clientID, accountEmail, accountTy string
		scopes, grantAgents                         []string
		in                                          grantwire.Forwarded
	)
	return a.command(spec{
		use:   "import <provider>",
		short: "Store a connection forwarded by an application that already holds the user's consent",
		long: `Store a forwarded connection: the OAuth client a host application was issued (client id and
secret) and the user's refresh token, with the scopes that consent granted and the agents
to grant. grantwire then refreshes as that client; no browser is involved.

The forwarded scopes must cover the union of the scopes every --grant-agent declares for the
provider: a refresh can never widen scope, so otherwise nothing is written
(SCOPE_MISMATCH, exit 4) and re-consent in the host application is the only fix.

Secrets come only from stdin (--from-stdin) or a file (--from-file): a JSON object (the body
of POST /v1/connections/{provider}) or KEY=VALUE lines with the keys client_id,
client_secret, refresh_token, scopes, account_email, account_type and grant_agents. The
non-secret fields may be given as flags instead; a field given both ways must agree.`,
		example: `  # JSON from the host application
  host-app export-connection --json | grantwire import google --from-stdin

  # KEY=VALUE lines, non-secret fields as flags
  printf 'client_secret=%s\nrefresh_token=%s\n' "$SECRET" "$REFRESH" |
    grantwire import google --from-stdin --client-id 123.apps.googleusercontent.com \
      --scopes https://www.googleapis.com/auth/gmail.modify,https://www.googleapis.com/auth/gmail.send \
      --account-email alice@example.com --grant-agent builtin:email

  grantwire import microsoft --from-file ~/forwarded.json --json`,
		args: exactArgs(1),
		run: operation[*grantwire.ForwardedSummary]{
			parse: func(*cobra.Command, []string) error {
				if fromStdin == (fromFile != "") {
					return usagef("import reads the forwarded secrets from --from-stdin or --from-file (exactly one)")
				}
				var raw []byte
				var err error
				source := "stdin"
				if fromFile != "" {
					source = fromFile
					raw, err = a.readSecretFile(fromFile)
				} else {
					raw, err = readAllLimited(a.Stdin, "stdin")
				}
				if err != nil {
					return err
				}
				if in, err = parseForwarded(raw, source); err != nil {
					return err
				}
				merge := func(field string, dst *string, flag string) error {
					if flag == "" {
						return nil
					}
					if *dst != "" && *dst != flag {
						return usagef("%s is given both as a flag and in %s, differently", field, source)
					}
					*dst = flag
					return nil
				}
				mergeList := func(field string, dst *[]string, flag []string) error {
					if len(flag) == 0 {
						return nil
					}
					if len(*dst) > 0 && !sameSet(*dst, flag) {
						return usagef("%s is given both as a flag and in %s, differently", field, source)
					}
					*dst = flag
					return nil
				}
				for _, err := range []error{
					merge("client_id", &in.ClientID, clientID),
					merge("account_email", &in.AccountEmail, accountEmail),
					merge("account_type", &in.AccountType, accountTy),
					mergeList("scopes", &in.Scopes, scopes),
					mergeList("grant_agents", &in.GrantAgents, grantAgents),
				} {
					if err != nil {
						return err
					}
				}
				return nil
			},
			// What the forwarded connection must hold (client_id, refresh_token, scopes) is the
			// policy's to check (import_forwarded), as for any other caller of the Go API.
			call: func(ctx context.Context, c *grantwire.Client, args []string) (*grantwire.ForwardedSummary, error) {
				in.Provider = args[0]
				sum, err := c.ImportForwarded(ctx, in)
				if err == nil {
					sum.GrantAgents = jsonx.NonNil(sum.GrantAgents)
				}
				return sum, err
			},
			render: func(sum *grantwire.ForwardedSummary, _ []string) error {
				a.printf("Imported the forwarded %s connection of %s with %s\n", sum.Provider, orUnknown(sum.AccountEmail), strings.Join(sum.Scopes, " "))
				if len(sum.GrantAgents) > 0 {
					a.printf("Granted %s → %s\n", sum.Provider, strings.Join(sum.GrantAgents, ", "))
				}
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			f := cmd.Flags()
			f.BoolVar(&fromStdin, "from-stdin", false, "read the forwarded connection from stdin (JSON or KEY=VALUE lines)")
			f.StringVar(&fromFile, "from-file", "", "read the forwarded connection from this file")
			f.StringVar(&clientID, "client-id", "", "the host application's OAuth client id")
			addList(f, &scopes, "scopes", "scopes", "the scopes the forwarded consent granted (repeatable; commas or spaces)")
			f.StringVar(&accountEmail, "account-email", "", "the account, for display")
			f.StringVar(&accountTy, "account-type", "", "the account type, for display")
			addList(f, &grantAgents, "grant-agent", "agent", "an agent to grant the connection (repeatable)")
			refuseSecret(f, "client-secret", "put client_secret on stdin (--from-stdin) or in a file (--from-file)")
			refuseSecret(f, "refresh-token", "put refresh_token on stdin (--from-stdin) or in a file (--from-file)")
		},
	})
}

func sameSet(a, b []string) bool {
	x := append([]string(nil), a...)
	y := append([]string(nil), b...)
	sort.Strings(x)
	sort.Strings(y)
	x, y = dedupe(x), dedupe(y)
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "(account unknown)"
	}
	return s
}
