package decisionlog_test

import (
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/grantwire/grantwire/decisionlog"
)

// A refresh of get_access_token: the largest decision of the hot operation.
var benchRecord = decisionlog.Record{
	Op: "get_access_token",
	Input: json.RawMessage(`{"args":{"agent":"builtin:chat","provider":"google","scopes":["https://www.googleapis.com/auth/gmail.readonly"]},"attempt":0,"facts":{` +
		`"client":{"client_id_hash":"520e6e9a","found":true,"has_secret":true,"source":"keyring","tenant":null,"version":"4b8c1d2e3f405162"},` +
		`"conn":{"account":"user@example.com","account_type":null,"client_id_hash":"520e6e9a","connected_at":1790000000000,"found":true,"refresh":"sha256:0a1b2c3d4e5f6071","scopes":["https://www.googleapis.com/auth/gmail.readonly"],"tenant":null,"valid":true,"version":"8899aabbccddeeff"},` +
		`"conn@lock":{"account":"user@example.com","account_type":null,"client_id_hash":"520e6e9a","connected_at":1790000000000,"found":true,"refresh":"sha256:0a1b2c3d4e5f6071","scopes":["https://www.googleapis.com/auth/gmail.readonly"],"tenant":null,"valid":true,"version":"8899aabbccddeeff"},` +
		`"grant":{"found":true,"value":["https://www.googleapis.com/auth/gmail.readonly"]},"lock":"held","now":1790003660000,"now@lock":1790003660000,` +
		`"refresh":{"error":"","expires_in":3600,"refresh":"sha256:1122334455667788","rotated":true,"status":200},` +
		`"token":{"client_id_hash":"520e6e9a","connected_at":1790000000000,"expires_at":1790003600000,"found":true}},"op":"get_access_token"}`),
	Output: json.RawMessage(`{"effects":[{"expect":{"refresh":"sha256:0a1b2c3d4e5f6071"},"kind":"connection.set_refresh","provider":"google","refresh":{"$ref":"refresh#refresh_token"}},` +
		`{"access":{"$ref":"refresh#access_token"},"client_id_hash":"520e6e9a","connected_at":1790000000000,"expires_at":1790007260000,"kind":"token.put","provider":"google"}],` +
		`"result":{"access_token":{"$ref":"refresh#access_token"},"expires_at":1790007260000,"provider":"google","scopes":["https://www.googleapis.com/auth/gmail.readonly"]},"status":"done"}`),
	Revision: "sha256:640f506a4fe7ccee", Engine: "wasm", Rounds: 2, At: time.Unix(1_790_003_660, 0), Duration: time.Millisecond,
}

func BenchmarkLog(b *testing.B) {
	l := decisionlog.New(io.Discard)
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Log(benchRecord); err != nil {
			b.Fatal(err)
		}
	}
}
