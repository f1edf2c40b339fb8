package decisionlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/grantwire/grantwire/internal/jsonx"
)

// Redacted is an event's input and result after [Redact], in canonical JSON, with the
// JSON pointers of the values it replaced.
type Redacted struct {
	Input  json.RawMessage
	Result json.RawMessage
	Masked []string
	Erased []string
}

// secretNames are members whose string value would be a secret. The core never sees one,
// so a correct shell never triggers this; it keeps a shell bug out of the log.
var secretNames = map[string]bool{
	"access_token": true, "refresh_token": true, "id_token": true,
	"client_secret": true, "code_verifier": true, "api_key": true, "password": true,
}

// pseudonymKeys are members whose string values are opaque tokens derived from secrets:
// the digests and CRC-32s of secret descriptions ({"$ref", "digest", "crc32"}), the
// client-id hashes the policy copies from those CRC-32s ("client_id_hash"), and the version
// tokens of stored values ("version").
var pseudonymKeys = map[string]bool{"digest": true, "crc32": true, "client_id_hash": true, "version": true}

// emptySecret are the digest and the CRC-32 of the empty string, as a host describes it:
// they reveal nothing but emptiness, and the policy compares digests with the first to
// tell an empty secret from a real one, so they are kept for the log to replay.
var emptySecret = map[string]bool{"sha256:e3b0c44298fc1c14": true, "00000000": true}

const erasedValue = "[redacted]"

var (
	pseudonymRE    = regexp.MustCompile(`^\[redacted(?::([0-9]+))?\]$`)
	pseudonymNumRE = regexp.MustCompile(`"\[redacted:([0-9]+)\]"`)
)

// Redact returns input and result with, in every object at any depth:
//
//   - the string value of each "digest", "crc32", "client_id_hash" and "version" member
//     (what secret descriptions say of their secret, the client-id hash taken from one, and
//     the version tokens of stored values) replaced by a pseudonym "[redacted:N]", except
//     the digest and CRC-32 of the empty string. Equal values get the same pseudonym within
//     one event, numbered in canonical order, input first. The policy only compares these
//     tokens for equality and copies them into preconditions, results and ledgers, so it
//     decides the redacted input exactly as it decided the original, up to the same
//     replacement: that is what makes a log replayable;
//   - the value of each "$ref" member (the reference to a secret the shell holds) replaced
//     by "[redacted]";
//   - the string value of each member named like a secret (access_token, refresh_token,
//     id_token, client_secret, code_verifier, api_key, password) replaced by "[redacted]"
//     and listed in Erased.
//
// Values that are already redacted are kept, so Redact is idempotent. Masked lists the
// JSON pointers (/input/..., /result/...) of the pseudonymised and reference values.
// A nil result stays nil.
func Redact(input, result json.RawMessage) (*Redacted, error) {
	r := &redactor{seen: map[string]string{}}
	// New pseudonyms never reuse a number already present (a replayed result next to an
	// already redacted input).
	for _, raw := range [][]byte{input, result} {
		for _, m := range pseudonymNumRE.FindAllSubmatch(raw, -1) {
			if n, err := strconv.Atoi(string(m[1])); err == nil && n > r.n {
				r.n = n
			}
		}
	}
	in, err := r.redactJSON(input, "/input")
	if err != nil {
		return nil, fmt.Errorf("decisionlog: input: %w", err)
	}
	out := &Redacted{Input: in}
	if result != nil {
		if out.Result, err = r.redactJSON(result, "/result"); err != nil {
			return nil, fmt.Errorf("decisionlog: result: %w", err)
		}
	}
	out.Masked, out.Erased = sortedUnique(r.masked), sortedUnique(r.erased)
	return out, nil
}

type redactor struct {
	seen   map[string]string
	n      int
	masked []string
	erased []string
}

func (r *redactor) redactJSON(raw json.RawMessage, at string) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	v = r.walk(v, []string{at})
	return jsonx.Append(nil, v)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// pointer renders a path (its first element already a pointer) as a JSON pointer.
func pointer(path []string) string {
	var b strings.Builder
	b.WriteString(path[0])
	for _, p := range path[1:] {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(p))
	}
	return b.String()
}

func (r *redactor) walk(v any, path []string) any {
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		for _, k := range keys {
			p := append(path, k)
			s, isString := x[k].(string)
			switch {
			case k == "$ref":
				x[k] = erasedValue
				r.masked = append(r.masked, pointer(p))
			case isString && secretNames[k]:
				x[k] = erasedValue
				r.erased = append(r.erased, pointer(p))
			case isString && pseudonymKeys[k] && !emptySecret[s]:
				x[k] = r.pseudonym(s)
				r.masked = append(r.masked, pointer(p))
			default:
				x[k] = r.walk(x[k], p)
			}
		}
		return x
	case []any:
		for i := range x {
			x[i] = r.walk(x[i], append(path, strconv.Itoa(i)))
		}
		return x
	default:
		return v
	}
}

func (r *redactor) pseudonym(s string) string {
	if pseudonymRE.MatchString(s) {
		return s
	}
	if p, ok := r.seen[s]; ok {
		return p
	}
	r.n++
	p := "[redacted:" + strconv.Itoa(r.n) + "]"
	r.seen[s] = p
	return p
}
