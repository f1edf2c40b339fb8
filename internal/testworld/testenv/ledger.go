package testenv

import (
	"strconv"
	"strings"
)

// LargeGrants is a grants ledger of n agents granted "openid" on the connector google,
// {"google": {"builtin:a0": ["openid"], ...}}: the large document of the tests and
// benchmarks that read, encode or rewrite a ledger by the megabyte (issue 20 §1.20).
func LargeGrants(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"google": {`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"builtin:a` + strconv.Itoa(i) + `": ["openid"]`)
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}
