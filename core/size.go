package core

// FactJSONLen is the size of a fact in a query as encoding/json writes it ([DecideTyped]):
// compacted, with <, >, & and U+2028/U+2029 escaped; a nil fact is null.
func FactJSONLen(raw []byte) int {
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

// KeyJSONLen is the size of a fact's key (valid UTF-8) as encoding/json writes it. With
// FactJSONLen, an engine that builds its input from a [Query]'s parts measures the query
// against [MaxQueryBytes] as CheckQuery would measure its JSON.
func KeyJSONLen(k string) int {
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
