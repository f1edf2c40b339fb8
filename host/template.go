package host

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"golang.org/x/oauth2"
)

// templates are the template operators; any other member is literal (mcp_servers.json
// holds {"$keyring": ...} references, for example).
var templates = map[string]bool{"$number": true, "$concat": true, "$s256": true, "$basic": true, "$url": true, "$jwt": true}

// resolve substitutes the templates of hostabi/README.md ("$ref", "$number", "$concat",
// "$s256", "$basic", "$url", "$jwt") in a parameter and returns the plain value.
func (o *Op) resolve(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("host: malformed template: %w", err)
	}
	return o.subst(v)
}

// templateString resolves a template that must give a string.
func (o *Op) templateString(raw json.RawMessage) (string, error) {
	v, err := o.resolve(raw)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("host: expected a string template, got %s", cut(string(raw), 80))
	}
	return s, nil
}

func (o *Op) subst(v any) (any, error) {
	switch t := v.(type) {
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			r, err := o.subst(e)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		if ref, ok := t["$ref"].(string); ok {
			s, ok := o.refs[ref]
			if !ok {
				return nil, fmt.Errorf("host: unknown secret reference %q", ref)
			}
			return s, nil
		}
		if len(t) == 1 {
			for k, arg := range t {
				if templates[k] {
					return o.op(k, arg)
				}
			}
		}
		if base, ok := t["$url"]; ok && len(t) == 2 {
			return o.url(base, t["query"])
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			r, err := o.subst(e)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	}
	return v, nil
}

func (o *Op) strings(arg any, want int) ([]string, error) {
	list, ok := arg.([]any)
	if !ok || (want > 0 && len(list) != want) {
		return nil, fmt.Errorf("host: template expects a list of %d", want)
	}
	out := make([]string, len(list))
	for i, e := range list {
		r, err := o.subst(e)
		if err != nil {
			return nil, err
		}
		s, ok := r.(string)
		if !ok {
			return nil, fmt.Errorf("host: template expects strings")
		}
		out[i] = s
	}
	return out, nil
}

func (o *Op) op(name string, arg any) (any, error) {
	switch name {
	case "$number":
		s, ok := arg.(string)
		if !ok || !validNumber(s) {
			return nil, fmt.Errorf("host: $number needs a number's text")
		}
		return json.Number(s), nil
	case "$concat":
		parts, err := o.strings(arg, 0)
		if err != nil {
			return nil, err
		}
		return strings.Join(parts, ""), nil
	case "$s256":
		r, err := o.subst(arg)
		if err != nil {
			return nil, err
		}
		s, ok := r.(string)
		if !ok {
			return nil, fmt.Errorf("host: $s256 needs a string")
		}
		return oauth2.S256ChallengeFromVerifier(s), nil
	case "$url":
		return o.url(arg, nil)
	case "$jwt":
		return o.jwt(arg)
	case "$basic":
		up, err := o.strings(arg, 2)
		if err != nil {
			return nil, err
		}
		cred := url.QueryEscape(up[0]) + ":" + url.QueryEscape(up[1])
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(cred)), nil
	}
	return nil, fmt.Errorf("host: unknown template %q", name)
}

func (o *Op) url(base, query any) (any, error) {
	b, err := o.subst(base)
	if err != nil {
		return nil, err
	}
	s, ok := b.(string)
	if !ok {
		return nil, fmt.Errorf("host: $url needs a string base")
	}
	enc, err := o.form(query)
	if err != nil {
		return nil, err
	}
	if enc == "" {
		return s, nil
	}
	if strings.Contains(s, "?") {
		return s + "&" + enc, nil
	}
	return s + "?" + enc, nil
}

// form encodes an object of string templates as application/x-www-form-urlencoded, keys
// sorted.
func (o *Op) form(v any) (string, error) {
	if v == nil {
		return "", nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "", fmt.Errorf("host: a form or query must be an object")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	vals := url.Values{}
	for _, k := range keys {
		r, err := o.subst(m[k])
		if err != nil {
			return "", err
		}
		if r == nil {
			continue // an absent optional value
		}
		s, ok := r.(string)
		if !ok {
			return "", fmt.Errorf("host: form value %q is not a string", k)
		}
		vals.Set(k, s)
	}
	return vals.Encode(), nil
}
