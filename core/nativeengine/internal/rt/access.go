package rt

// Read access to a value's members for code that turns a result into Go values without
// its JSON text (the native engine's typed decisions). The slices returned are the
// value's own: callers must not change them.

// Elems returns the elements of an array or the members of a set, in order (nil for any
// other value).
func Elems(v *V) []*V {
	if v == nil || (v.k != KArr && v.k != KSet) {
		return nil
	}
	return v.a
}

// Members returns the keys (sorted) and the values of an object (nil, nil for any other
// value).
func Members(v *V) (keys, vals []*V) {
	if v == nil || v.k != KObj {
		return nil, nil
	}
	return v.a, v.o
}
