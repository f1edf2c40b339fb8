package decisionlog_test

import (
	"fmt"

	"github.com/grantwire/grantwire/decisionlog"
)

// Digests and version tokens become pseudonyms that keep equality within the event, so
// the redacted input still decides the same way; secret references are erased.
func ExampleRedact() {
	input := []byte(`{"op":"get_access_token","facts":{"conn@lock":{"refresh":"sha256:0a1b2c3d4e5f6071","version":"8899aabbccddeeff"}}}`)
	result := []byte(`{"status":"done","effects":[{"kind":"connection.delete","expect":{"refresh":"sha256:0a1b2c3d4e5f6071"}}],"result":{"access_token":{"$ref":"refresh#access_token"}}}`)
	r, err := decisionlog.Redact(input, result)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(r.Input))
	fmt.Println(string(r.Result))
	fmt.Println(r.Masked)
	// Output:
	// {"facts":{"conn@lock":{"refresh":"[redacted:1]","version":"[redacted:2]"}},"op":"get_access_token"}
	// {"effects":[{"expect":{"refresh":"[redacted:1]"},"kind":"connection.delete"}],"result":{"access_token":{"$ref":"[redacted]"}},"status":"done"}
	// [/input/facts/conn@lock/refresh /input/facts/conn@lock/version /result/effects/0/expect/refresh /result/result/access_token/$ref]
}
