package host

import (
	"context"
	"encoding/json"
	"math"
	"strconv"

	"github.com/grantwire/grantwire/internal/jsonx"
)

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// encodeValue writes a JSON value compactly with sorted keys and no HTML escaping.
func encodeValue(v any) ([]byte, error) { return jsonx.MarshalPlain(v) }

// encodeDocument writes a ledger: sorted keys, 2-space indentation, a final newline.
func encodeDocument(v any) ([]byte, error) {
	return jsonx.Document(context.Background(), v)
}

// encodeDocumentContext is encodeDocument that stops when ctx is done (jsonx.Document).
func encodeDocumentContext(ctx context.Context, v any) ([]byte, error) {
	return jsonx.Document(ctx, v)
}

// validNumber reports whether s is a JSON number.
func validNumber(s string) bool {
	if !json.Valid([]byte(s)) {
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && !math.IsInf(f, 0)
}
