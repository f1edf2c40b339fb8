package decisionlog_test

import (
	"fmt"

	"github.com/grantwire/grantwire/decisionlog"
)

// What secret descriptions say of their secret (digest, CRC-32) and version tokens become
// pseudonyms that keep equality within the event, so the redacted input still decides the
// same way (the server rotated the refresh token: the digests differ); secret references
// are erased.
func ExampleRedact() {
	input := []byte(`{"op":"get_access_token","facts":{` +
		`"conn@lock":{"json":{"refresh_token":{"$ref":"conn@lock#refresh_token","crc32":"b3bd5f81","digest":"sha256:0a1b2c3d4e5f6071"}},"version":"8899aabbccddeeff"},` +
		`"refresh":{"json":{"refresh_token":{"$ref":"refresh#refresh_token","crc32":"de9a5293","digest":"sha256:1122334455667788"}},"status":200}}}`)
	result := []byte(`{"status":"done","effects":[{"kind":"keyring.set","user":"google:default","expect":{"version":"8899aabbccddeeff"},` +
		`"value":{"refresh_token":{"$ref":"refresh#refresh_token"}}}],"result":{"access_token":{"$ref":"refresh#access_token"}}}`)
	r, err := decisionlog.Redact(input, result)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(r.Input))
	fmt.Println(string(r.Result))
	fmt.Println(r.Masked)
	// Output:
	// {"facts":{"conn@lock":{"json":{"refresh_token":{"$ref":"[redacted]","crc32":"[redacted:1]","digest":"[redacted:2]"}},"version":"[redacted:3]"},"refresh":{"json":{"refresh_token":{"$ref":"[redacted]","crc32":"[redacted:4]","digest":"[redacted:5]"}},"status":200}},"op":"get_access_token"}
	// {"effects":[{"expect":{"version":"[redacted:3]"},"kind":"keyring.set","user":"google:default","value":{"refresh_token":{"$ref":"[redacted]"}}}],"result":{"access_token":{"$ref":"[redacted]"}},"status":"done"}
	// [/input/facts/conn@lock/json/refresh_token/$ref /input/facts/conn@lock/json/refresh_token/crc32 /input/facts/conn@lock/json/refresh_token/digest /input/facts/conn@lock/version /input/facts/refresh/json/refresh_token/$ref /input/facts/refresh/json/refresh_token/crc32 /input/facts/refresh/json/refresh_token/digest /result/effects/0/expect/version /result/effects/0/value/refresh_token/$ref /result/result/access_token/$ref]
}
