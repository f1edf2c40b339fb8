package jsonx

// GoLen is the size of the JSON value raw as encoding/json writes it inside a value it
// marshals (a json.RawMessage, as core.DecideTyped writes a fact in a query): compacted,
// with <, >, & and U+2028/U+2029 escaped; empty raw is null.
func GoLen(raw []byte) int {
	if len(raw) == 0 {
		return len("null")
	}
	n, inStr, esc := 0, false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inStr {
			switch c {
			case ' ', '\t', '\n', '\r':
			case '"':
				inStr = true
				n++
			default:
				n++
			}
			continue
		}
		switch {
		case esc:
			esc = false
			n++
		case c == '\\':
			esc = true
			n++
		case c == '"':
			inStr = false
			n++
		case c == '<' || c == '>' || c == '&':
			n += len(`\u003c`)
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
			n += len(`\u2028`)
			i += 2
		default:
			n++
		}
	}
	return n
}

// GoStringLen is the size of the string k (valid UTF-8) as encoding/json writes it, the
// length of [AppendGoString]'s output. With GoLen, an engine that builds its input from a
// core.Query's parts (facts and their keys) measures the query against core.MaxQueryBytes
// as core.CheckQuery would measure its JSON.
func GoStringLen(k string) int {
	n := len(`""`)
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += len(`\u003c`)
		case c == 0xE2 && i+2 < len(k) && k[i+1] == 0x80 && k[i+2]&^1 == 0xA8:
			n += len(`\u2028`)
			i += 2
		default:
			n++
		}
	}
	return n
}
