package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// The stdin parsers of the CLI under fuzzing (issue 10, item 19). A secret is planted in
// every place a line or a JSON document can hold it; whatever the input, a refused one is a
// usage error that does not contain the secret.
// Longer: go test ./cmd/grantwire -run '^$' -fuzz 'FuzzKeyValues$' -fuzztime 5m
// (and FuzzForwarded).

// plantable reports whether a secret can be searched for in messages: long enough, and
// not a part of the static words or known key names an error may hold.
func plantable(secret string, known []string) bool {
	if len(secret) < 6 {
		return false
	}
	static := strings.Join(known, " ") + " stdin line is not KEY=VALUE with a key that takes none the line is shown in case it secret given twice a forwarded connection mcp-brave-search BRAVE_API_KEY client_id client_secret refresh_token scopes account_email account_type grant_agents not valid JSON at byte has the wrong type want string field one of the known fields duplicated name"
	return !strings.Contains(static, secret) && !strings.ContainsAny(secret, "\r\n")
}

func FuzzKeyValues(f *testing.F) {
	f.Add("sk-live-0123456789=abc", uint8(0))
	f.Add("c2VjcmV0LXZhbHVl==", uint8(1))
	f.Add("BSA_SECRET_TOKEN_9f8e7d", uint8(2))
	f.Add("postgres://u:pw@h/db?sslmode=require", uint8(3))
	f.Add("x=y=z", uint8(4))
	f.Add("# not a comment=really", uint8(5))
	known := []string{"BRAVE_API_KEY", "OTHER_KEY"}
	f.Fuzz(func(t *testing.T, secret string, layout uint8) {
		var lines []string
		switch layout % 6 {
		case 0: // the secret alone on a line
			lines = []string{"BRAVE_API_KEY=ok", secret}
		case 1: // as a value
			lines = []string{"BRAVE_API_KEY=" + secret}
		case 2: // as a value, then a bad line
			lines = []string{"BRAVE_API_KEY=" + secret, "=x"}
		case 3: // given twice
			lines = []string{"BRAVE_API_KEY=" + secret, "BRAVE_API_KEY=" + secret}
		case 4: // after an unknown key
			lines = []string{"NOT_A_KEY=" + secret}
		case 5: // with spaces and a CR
			lines = []string{"  " + secret + "  \r"}
		}
		out, order, err := parseKeyValues([]byte(strings.Join(lines, "\n")), "stdin", known, "mcp-brave-search")
		if err == nil {
			for _, k := range order {
				if _, ok := out[k]; !ok || (k != "BRAVE_API_KEY" && k != "OTHER_KEY") {
					t.Fatalf("accepted key %q", k)
				}
			}
			return
		}
		if _, usage := err.(*usageError); !usage {
			t.Fatalf("not a usage error: %T %v", err, err)
		}
		if plantable(secret, known) && strings.Contains(err.Error(), secret) {
			t.Fatalf("the error echoes the secret %q: %v", secret, err)
		}
		for _, line := range lines {
			if k, _, _ := strings.Cut(strings.TrimSpace(line), "="); len(k) >= 6 && plantable(k, known) && strings.Contains(err.Error(), k) {
				t.Fatalf("the error echoes a part of a line %q: %v", k, err)
			}
		}
	})
}

func FuzzForwarded(f *testing.F) {
	f.Add("1//0gSECRETrefreshTOKEN", "refresh_token", uint8(0))
	f.Add("GOCSPX-client-secret", "client_secret", uint8(1))
	f.Add("ya29.secret", "ya29.secret", uint8(2))
	f.Add("secret\xff", "refresh_token", uint8(3))
	f.Add("sec", "scopes", uint8(4))
	f.Fuzz(func(t *testing.T, secret, field string, layout uint8) {
		val, _ := json.Marshal(secret)
		key, _ := json.Marshal(field)
		var doc string
		switch layout % 6 {
		case 0:
			doc = `{"client_id": "cid", ` + string(key) + `: ` + string(val) + `}`
		case 1: // duplicated
			doc = `{` + string(key) + `: ` + string(val) + `, ` + string(key) + `: ` + string(val) + `}`
		case 2: // the secret as a field name
			doc = `{` + string(val) + `: "x"}`
		case 3: // raw bytes in a value (invalid UTF-8 stays invalid)
			doc = `{"refresh_token": "` + secret + `"}`
		case 4: // a wrong type
			doc = `{"scopes": ` + string(val) + `}`
		case 5: // as KEY=VALUE lines
			doc = field + "=" + secret + "\n" + secret
		}
		_, err := parseForwarded([]byte(doc), "stdin")
		if err == nil {
			return
		}
		if _, usage := err.(*usageError); !usage {
			t.Fatalf("not a usage error: %T %v", err, err)
		}
		if plantable(secret, forwardedKeys) && !fieldName.MatchString(`"`+secret+`"`) && strings.Contains(err.Error(), secret) {
			t.Fatalf("the error echoes the secret %q: %v", secret, err)
		}
	})
}
