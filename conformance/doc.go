// Package conformance holds grantwire's behaviour as data — a corpus of scenarios, one
// YAML file per behaviour family (corpus/*.yaml, schema in schema/scenario.schema.json) —
// and the one runner, [Run], that executes the corpus against any [Shell] (a shell × engine
// pair). See README.md for the scenario format.
//
// It imports hostabi, core and catalog (for the staging and the types it checks) and a
// YAML loader; never an engine or a concrete shell: memshell and nativeshell (the OS
// shell) import it.
package conformance
