# METADATA
# title: builtins
# description: |
#   The test policy of the native engine's runtime (core/nativeengine/internal/irtest):
#   every built-in function the runtime implements, called with the arguments of the
#   input. input.f names the function, input.args holds its arguments; an argument
#   whose index is in input.sets is made a set of its elements, one in input.objs an
#   object of its [key, value] pairs (JSON has neither). eval is the result, or
#   undefined.
package irtest

import rego.v1

a(i) := {x | some x in input.args[i]} if {
	i in input.sets
} else := {k: v | some [k, v] in input.args[i]} if {
	i in input.objs
} else := input.args[i]

eval := a(0) in a(1) if input.f == "internal.member_2"

eval := x if {
	input.f == "internal.member_3"
	x := _member3(a(0), a(1), a(2))
}

_member3(k, v, c) if k, v in c

else := false

eval := $"<{a(0)}|{a(1)}>" if input.f == "internal.template_string"

eval := io.jwt.decode(a(0)) if input.f == "io.jwt.decode"

eval := io.jwt.verify_hs256(a(0), a(1)) if input.f == "io.jwt.verify_hs256"

eval := io.jwt.verify_hs384(a(0), a(1)) if input.f == "io.jwt.verify_hs384"

eval := io.jwt.verify_hs512(a(0), a(1)) if input.f == "io.jwt.verify_hs512"

eval := json.marshal_with_options(a(0), a(1)) if input.f == "json.marshal_with_options"

eval := json.patch(a(0), a(1)) if input.f == "json.patch"

eval := net.cidr_contains_matches(a(0), a(1)) if input.f == "net.cidr_contains_matches"

eval := net.cidr_expand(a(0)) if input.f == "net.cidr_expand"

eval := net.cidr_merge(a(0)) if input.f == "net.cidr_merge"

eval := regex.globs_match(a(0), a(1)) if input.f == "regex.globs_match"

eval := regex.template_match(a(0), a(1), a(2), a(3)) if input.f == "regex.template_match"

eval := semver.compare(a(0), a(1)) if input.f == "semver.compare"

eval := semver.is_valid(a(0)) if input.f == "semver.is_valid"

eval := units.parse(a(0)) if input.f == "units.parse"

eval := units.parse_bytes(a(0)) if input.f == "units.parse_bytes"

eval := uuid.parse(a(0)) if input.f == "uuid.parse"

eval := [[p, v] | walk(a(0), [p, v])] if input.f == "walk"

eval := a(0) & a(1) if input.f == "and"

eval := a(0) | a(1) if input.f == "or"

eval := abs(a(0)) if input.f == "abs"

eval := array.concat(a(0), a(1)) if input.f == "array.concat"

eval := array.flatten(a(0)) if input.f == "array.flatten"

eval := array.reverse(a(0)) if input.f == "array.reverse"

eval := array.slice(a(0), a(1), a(2)) if input.f == "array.slice"

eval := base64.decode(a(0)) if input.f == "base64.decode"

eval := base64.encode(a(0)) if input.f == "base64.encode"

eval := base64.is_valid(a(0)) if input.f == "base64.is_valid"

eval := base64url.decode(a(0)) if input.f == "base64url.decode"

eval := base64url.encode(a(0)) if input.f == "base64url.encode"

eval := base64url.encode_no_pad(a(0)) if input.f == "base64url.encode_no_pad"

eval := bits.and(a(0), a(1)) if input.f == "bits.and"

eval := bits.lsh(a(0), a(1)) if input.f == "bits.lsh"

eval := bits.negate(a(0)) if input.f == "bits.negate"

eval := bits.or(a(0), a(1)) if input.f == "bits.or"

eval := bits.rsh(a(0), a(1)) if input.f == "bits.rsh"

eval := bits.xor(a(0), a(1)) if input.f == "bits.xor"

eval := ceil(a(0)) if input.f == "ceil"

eval := concat(a(0), a(1)) if input.f == "concat"

eval := contains(a(0), a(1)) if input.f == "contains"

eval := count(a(0)) if input.f == "count"

eval := crypto.hmac.equal(a(0), a(1)) if input.f == "crypto.hmac.equal"

eval := crypto.hmac.md5(a(0), a(1)) if input.f == "crypto.hmac.md5"

eval := crypto.hmac.sha1(a(0), a(1)) if input.f == "crypto.hmac.sha1"

eval := crypto.hmac.sha256(a(0), a(1)) if input.f == "crypto.hmac.sha256"

eval := crypto.hmac.sha512(a(0), a(1)) if input.f == "crypto.hmac.sha512"

eval := crypto.md5(a(0)) if input.f == "crypto.md5"

eval := crypto.sha1(a(0)) if input.f == "crypto.sha1"

eval := crypto.sha256(a(0)) if input.f == "crypto.sha256"

eval := a(0) / a(1) if input.f == "div"

eval := endswith(a(0), a(1)) if input.f == "endswith"

eval := a(0) == a(1) if input.f == "equal"

eval := floor(a(0)) if input.f == "floor"

eval := format_int(a(0), a(1)) if input.f == "format_int"

eval := glob.match(a(0), a(1), a(2)) if input.f == "glob.match"

eval := glob.quote_meta(a(0)) if input.f == "glob.quote_meta"

eval := graph.reachable(a(0), a(1)) if input.f == "graph.reachable"

eval := graph.reachable_paths(a(0), a(1)) if input.f == "graph.reachable_paths"

eval := a(0) > a(1) if input.f == "gt"

eval := a(0) >= a(1) if input.f == "gte"

eval := hex.decode(a(0)) if input.f == "hex.decode"

eval := hex.encode(a(0)) if input.f == "hex.encode"

eval := indexof(a(0), a(1)) if input.f == "indexof"

eval := indexof_n(a(0), a(1)) if input.f == "indexof_n"

eval := intersection(a(0)) if input.f == "intersection"

eval := is_array(a(0)) if input.f == "is_array"

eval := is_boolean(a(0)) if input.f == "is_boolean"

eval := is_null(a(0)) if input.f == "is_null"

eval := is_number(a(0)) if input.f == "is_number"

eval := is_object(a(0)) if input.f == "is_object"

eval := is_set(a(0)) if input.f == "is_set"

eval := is_string(a(0)) if input.f == "is_string"

eval := json.filter(a(0), a(1)) if input.f == "json.filter"

eval := json.is_valid(a(0)) if input.f == "json.is_valid"

eval := json.marshal(a(0)) if input.f == "json.marshal"

eval := json.remove(a(0), a(1)) if input.f == "json.remove"

eval := json.unmarshal(a(0)) if input.f == "json.unmarshal"

eval := lower(a(0)) if input.f == "lower"

eval := a(0) < a(1) if input.f == "lt"

eval := a(0) <= a(1) if input.f == "lte"

eval := max(a(0)) if input.f == "max"

eval := min(a(0)) if input.f == "min"

eval := a(0) - a(1) if input.f == "minus"

eval := a(0) * a(1) if input.f == "mul"

eval := a(0) != a(1) if input.f == "neq"

eval := net.cidr_contains(a(0), a(1)) if input.f == "net.cidr_contains"

eval := net.cidr_intersects(a(0), a(1)) if input.f == "net.cidr_intersects"

eval := net.cidr_is_valid(a(0)) if input.f == "net.cidr_is_valid"

eval := numbers.range(a(0), a(1)) if input.f == "numbers.range"

eval := numbers.range_step(a(0), a(1), a(2)) if input.f == "numbers.range_step"

eval := object.filter(a(0), a(1)) if input.f == "object.filter"

eval := object.get(a(0), a(1), a(2)) if input.f == "object.get"

eval := object.keys(a(0)) if input.f == "object.keys"

eval := object.remove(a(0), a(1)) if input.f == "object.remove"

eval := object.subset(a(0), a(1)) if input.f == "object.subset"

eval := object.union(a(0), a(1)) if input.f == "object.union"

eval := object.union_n(a(0)) if input.f == "object.union_n"

eval := a(0) + a(1) if input.f == "plus"

eval := product(a(0)) if input.f == "product"

eval := regex.find_all_string_submatch_n(a(0), a(1), a(2)) if input.f == "regex.find_all_string_submatch_n"

eval := regex.find_n(a(0), a(1), a(2)) if input.f == "regex.find_n"

eval := regex.is_valid(a(0)) if input.f == "regex.is_valid"

eval := regex.match(a(0), a(1)) if input.f == "regex.match"

eval := regex.replace(a(0), a(1), a(2)) if input.f == "regex.replace"

eval := regex.split(a(0), a(1)) if input.f == "regex.split"

eval := a(0) % a(1) if input.f == "rem"

eval := replace(a(0), a(1), a(2)) if input.f == "replace"

eval := round(a(0)) if input.f == "round"

eval := sort(a(0)) if input.f == "sort"

eval := split(a(0), a(1)) if input.f == "split"

eval := sprintf(a(0), a(1)) if input.f == "sprintf"

eval := startswith(a(0), a(1)) if input.f == "startswith"

eval := strings.any_prefix_match(a(0), a(1)) if input.f == "strings.any_prefix_match"

eval := strings.any_suffix_match(a(0), a(1)) if input.f == "strings.any_suffix_match"

eval := strings.count(a(0), a(1)) if input.f == "strings.count"

eval := strings.replace_n(a(0), a(1)) if input.f == "strings.replace_n"

eval := strings.reverse(a(0)) if input.f == "strings.reverse"

eval := strings.split_n(a(0), a(1), a(2)) if input.f == "strings.split_n"

eval := substring(a(0), a(1), a(2)) if input.f == "substring"

eval := sum(a(0)) if input.f == "sum"

eval := to_number(a(0)) if input.f == "to_number"

eval := trim(a(0), a(1)) if input.f == "trim"

eval := trim_left(a(0), a(1)) if input.f == "trim_left"

eval := trim_prefix(a(0), a(1)) if input.f == "trim_prefix"

eval := trim_right(a(0), a(1)) if input.f == "trim_right"

eval := trim_space(a(0)) if input.f == "trim_space"

eval := trim_suffix(a(0), a(1)) if input.f == "trim_suffix"

eval := type_name(a(0)) if input.f == "type_name"

eval := union(a(0)) if input.f == "union"

eval := upper(a(0)) if input.f == "upper"

eval := uri.is_valid(a(0)) if input.f == "uri.is_valid"

eval := uri.parse(a(0)) if input.f == "uri.parse"

eval := urlquery.decode(a(0)) if input.f == "urlquery.decode"

eval := urlquery.decode_object(a(0)) if input.f == "urlquery.decode_object"

eval := urlquery.encode(a(0)) if input.f == "urlquery.encode"

eval := urlquery.encode_object(a(0)) if input.f == "urlquery.encode_object"
