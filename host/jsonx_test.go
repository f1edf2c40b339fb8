package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// indented is how ledgers were written before encodeDocument wrote them member by member:
// encoding/json, 2-space indentation, no HTML escaping, a final newline.
func indented(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(v)
	return buf.Bytes(), err
}

// TestEncodeDocumentIsIndentedJSON: a ledger is written as encoding/json indents it, byte
// for byte, for every type documents are made of (empty and nil objects and arrays, HTML
// characters, invalid UTF-8, numbers), so that cancellable writing changes no file.
func TestEncodeDocumentIsIndentedJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cases := []any{nil, map[string]any{}, []any{}, map[string]any(nil), []any(nil), "<&>",
		map[string]any{"a": map[string]any{}, "b": []any{}, "c": []any{map[string]any{"x": []string{"<", "&"}}}, "d": &hostabi.HostError{Code: "io"}}}
	for range 20000 {
		cases = append(cases, randomFact(r, 0))
	}
	for _, v := range cases {
		want, werr := indented(v)
		got, gerr := encodeDocument(v)
		if (werr == nil) != (gerr == nil) || (werr == nil && string(got) != string(want)) {
			t.Fatalf("%#v:\n encodeDocument %q (%v)\n encoding/json %q (%v)", v, got, gerr, want, werr)
		}
	}
}

// bigLedger is a grants ledger of n agents on one connector.
func bigLedger(n int) map[string]any {
	var doc map[string]any
	if err := json.Unmarshal(testenv.LargeGrants(n), &doc); err != nil {
		panic(err)
	}
	return doc
}

// TestEncodeDocumentStopsWhenCancelled: a cancellation during the encoding of a large
// ledger stops it (issue 20 §1.20): context.Canceled, and no bytes.
func TestEncodeDocumentStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b, err := encodeDocumentContext(ctx, bigLedger(10000))
	if !errors.Is(err, context.Canceled) || b != nil {
		t.Fatalf("a cancelled encoding gave %d bytes, %v", len(b), err)
	}
}

// BenchmarkEncodeDocument writes a grants ledger of 300,000 agents.
func BenchmarkEncodeDocument(b *testing.B) {
	doc := bigLedger(300000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeDocument(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeDocumentEncodingJSON is the same ledger written by encoding/json at once
// (what encodeDocument did before it became cancellable), for comparison.
func BenchmarkEncodeDocumentEncodingJSON(b *testing.B) {
	doc := bigLedger(300000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := indented(doc); err != nil {
			b.Fatal(err)
		}
	}
}
