package decisionlog_test

import (
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/grantwire/grantwire/decisionlog"
)

// A refresh of get_access_token (host ABI v2: secrets as descriptions, stored values with
// version tokens): the largest decision of the hot operation.
var benchRecord = decisionlog.Record{
	Op: "get_access_token",
	Input: json.RawMessage(`{"op":"get_access_token","args":{"agent":"builtin:chat","provider":"google","scopes":["https://www.googleapis.com/auth/gmail.readonly"]},"facts":{` +
		`"client":{"found":true,"json":{"client_id":{"$ref":"client#client_id","crc32":"520e6e9a","digest":"sha256:6bc15c3f071d0768"},"client_secret":{"$ref":"client#client_secret","crc32":"cce7461f","digest":"sha256:5a80eea3045cdb18"}},"value":{"$ref":"client#value","crc32":"0c102def","digest":"sha256:b2f9e0430eff3cbb"},"version":"b2f9e0430eff3cbb"},` +
		`"client@env_id":{"found":false},"client@env_secret":{"found":false},` +
		`"client@lock":{"found":true,"json":{"client_id":{"$ref":"client@lock#client_id","crc32":"520e6e9a","digest":"sha256:6bc15c3f071d0768"},"client_secret":{"$ref":"client@lock#client_secret","crc32":"cce7461f","digest":"sha256:5a80eea3045cdb18"}},"value":{"$ref":"client@lock#value","crc32":"0c102def","digest":"sha256:b2f9e0430eff3cbb"},"version":"b2f9e0430eff3cbb"},` +
		`"client@lock@env_id":{"found":false},"client@lock@env_secret":{"found":false},` +
		`"conn":{"found":true,"json":{"account_email":"user@example.com","client_id_hash":"520e6e9a","connected_at":{"$number":"1790000000.000"},"refresh_token":{"$ref":"conn#refresh_token","crc32":"b3bd5f81","digest":"sha256:361b01a3681c3189"},"scopes":["https://www.googleapis.com/auth/gmail.readonly"]},"value":{"$ref":"conn#value","crc32":"7dca9e89","digest":"sha256:e343538ce3c2f59f"},"version":"e343538ce3c2f59f"},` +
		`"conn@lock":{"found":true,"json":{"account_email":"user@example.com","client_id_hash":"520e6e9a","connected_at":{"$number":"1790000000.000"},"refresh_token":{"$ref":"conn@lock#refresh_token","crc32":"b3bd5f81","digest":"sha256:361b01a3681c3189"},"scopes":["https://www.googleapis.com/auth/gmail.readonly"]},"value":{"$ref":"conn@lock#value","crc32":"7dca9e89","digest":"sha256:e343538ce3c2f59f"},"version":"e343538ce3c2f59f"},` +
		`"grant":{"exists":true,"file":"/home/user/.grantwire/connectors/grants.json","found":true,"ledger":"connectors/grants.json","path":["google","builtin:chat"],"shape":["object","object","array"],"value":["https://www.googleapis.com/auth/gmail.readonly"],"version":"9f1c2a7b3d4e5f60"},` +
		`"lock":"held","now":1790003660000,"now@lock":1790003660000,` +
		`"refresh":{"headers":{"content-type":"application/json"},"json":{"access_token":{"$ref":"refresh#access_token","crc32":"ec500ba0","digest":"sha256:6da5dfc6af216943"},"expires_in":3600,"refresh_token":{"$ref":"refresh#refresh_token","crc32":"de9a5293","digest":"sha256:ce98124bd626f530"},"token_type":"Bearer"},"status":200},` +
		`"token":{"found":true,"json":{"access_token":{"$ref":"token#access_token","crc32":"9b7b41b3","digest":"sha256:7593a0466e63753e"},"client_id_hash":"520e6e9a","connected_at":1790000000000,"expires_at":1790003600000},"value":{"$ref":"token#value","crc32":"4bb768f7","digest":"sha256:37be5d307ad0e92c"},"version":"37be5d307ad0e92c"}},` +
		`"attempt":0,"round":3}`),
	Output: json.RawMessage(`{"status":"done","result":{"access_token":{"$ref":"refresh#access_token"},"expires_at":1790007260000,"provider":"google","scopes":["https://www.googleapis.com/auth/gmail.readonly"]},` +
		`"effects":[{"expect":{"version":"e343538ce3c2f59f"},"kind":"keyring.set","user":"google:default","value":{"account_email":"user@example.com","client_id_hash":"520e6e9a","connected_at":{"$number":"1790000000.000"},"refresh_token":{"$ref":"refresh#refresh_token"},"scopes":["https://www.googleapis.com/auth/gmail.readonly"]}},` +
		`{"kind":"keyring.set","user":"google:access_token","value":{"access_token":{"$ref":"refresh#access_token"},"client_id_hash":"520e6e9a","connected_at":1790000000000,"expires_at":1790007260000}}]}`),
	Revision: "sha256:640f506a4fe7ccee", Engine: "wasm", Rounds: 3, At: time.Unix(1_790_003_660, 0), Duration: time.Millisecond,
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
