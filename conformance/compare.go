package conformance

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// --- comparison -----------------------------------------------------------------------

func decode(b []byte) (any, error) {
	var v any
	err := json.Unmarshal(b, &v)
	return v, err
}

// decodeBoth decodes the two sides of a comparison; malformed JSON fails where.
func (r *runner) decodeBoth(where string, want, got []byte) (w, g any, ok bool) {
	w, err1 := decode(want)
	g, err2 := decode(got)
	if err1 != nil || err2 != nil {
		r.failf("%s: malformed JSON (%v, %v)", where, err1, err2)
		return nil, nil, false
	}
	return w, g, true
}

func (r *runner) equal(where string, want, got []byte) {
	if w, g, ok := r.decodeBoth(where, want, got); ok && !reflect.DeepEqual(w, g) {
		r.failf("%s:\n got  %s\n want %s", where, compact(got), compact(want))
	}
}

func (r *runner) subset(where string, want, got []byte) {
	w, g, ok := r.decodeBoth(where, want, got)
	if !ok {
		return
	}
	if msg := Subset(w, g, ""); msg != "" {
		r.failf("%s: %s\n got  %s\n want %s", where, msg, compact(got), compact(want))
	}
}

func compact(b []byte) string {
	v, err := decode(b)
	if err != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// Subset reports ("" when it holds) whether want is a subset of got: objects need every
// key of want (recursively); arrays need the same length and each element a subset of the
// element at the same index; everything else must be equal.
func Subset(want, got any, path string) string {
	if wa, ok := want.([]any); ok {
		ga, ok := got.([]any)
		if !ok || len(ga) != len(wa) {
			return fmt.Sprintf("at %s: got %s, want %d elements like %s", orRoot(path), mustJSON(got), len(wa), mustJSON(want))
		}
		for i := range wa {
			if msg := Subset(wa[i], ga[i], fmt.Sprintf("%s[%d]", path, i)); msg != "" {
				return msg
			}
		}
		return ""
	}
	wm, ok := want.(map[string]any)
	if !ok {
		if !reflect.DeepEqual(want, got) {
			return fmt.Sprintf("at %s: got %s, want %s", orRoot(path), mustJSON(got), mustJSON(want))
		}
		return ""
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return fmt.Sprintf("at %s: got %s, want an object", orRoot(path), mustJSON(got))
	}
	for _, k := range slices.Sorted(maps.Keys(wm)) {
		gv, ok := gm[k]
		if !ok {
			return fmt.Sprintf("at %s: missing %q", orRoot(path), k)
		}
		if msg := Subset(wm[k], gv, path+"."+k); msg != "" {
			return msg
		}
	}
	return ""
}

func orRoot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func strOrNil(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
