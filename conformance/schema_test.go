package conformance_test

import (
	"bytes"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/grantwire/grantwire/conformance"
)

// TestCorpusMatchesItsSchema validates every corpus file (as JSON) against
// schema/scenario.schema.json, and every scenario's merged world against #/$defs/world, so
// the schema a foreign host reads is the one the corpus keeps to.
func TestCorpusMatchesItsSchema(t *testing.T) {
	raw, err := os.ReadFile("schema/scenario.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	const id = "https://github.com/grantwire/grantwire/conformance/schema/scenario.schema.json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	file, err := c.Compile(id)
	if err != nil {
		t.Fatal(err)
	}
	world, err := c.Compile(id + "#/$defs/world")
	if err != nil {
		t.Fatal(err)
	}
	files, err := conformance.CorpusJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(files[name]))
		if err != nil {
			t.Fatal(err)
		}
		if err := file.Validate(v); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	corpus, err := conformance.DefaultCorpus()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range corpus.Scenarios() {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.MergedWorld()))
		if err != nil {
			t.Fatal(err)
		}
		if err := world.Validate(v); err != nil {
			t.Errorf("%s: merged world: %v", s.ID(), err)
		}
	}
}
