package rt

import (
	"encoding/hex"
	"strings"

	"github.com/google/uuid"
)

//rego:builtin uuid.parse
func (ev *Eval) BiUUIDParse(s string) *V {
	u, err := uuid.Parse(s)
	if err != nil {
		return nil
	}
	out := ev.Object(7)
	put := func(k string, v *V) { ObjectInsert(out, ev.String(k), v) }
	version := int64(u.Version())
	put("version", ev.Int(version))
	put("variant", ev.String(u.Variant().String()))
	if version == 1 || version == 2 {
		sec, nsec := u.Time().UnixTime()
		put("time", ev.Int(sec*1e9+nsec))
		node := u.NodeID()
		parts := make([]string, len(node))
		for i, b := range node {
			parts[i] = hex.EncodeToString([]byte{b})
		}
		put("nodeid", ev.String(strings.Join(parts, "-")))
		put("macvariables", ev.String(macKind(node[0])))
		put("clocksequence", ev.Int(int64(u.ClockSequence())))
		if version == 2 {
			put("id", ev.Int(int64(u.ID())))
			put("domain", ev.String(u.Domain().String()))
		}
	}
	return out
}

// macKind names the kind of a MAC address by its first octet's two low bits.
func macKind(b byte) string {
	switch local, multicast := b&2 != 0, b&1 != 0; {
	case local && multicast:
		return "local:multicast"
	case multicast:
		return "global:multicast"
	case local:
		return "local:unicast"
	}
	return "global:unicast"
}
