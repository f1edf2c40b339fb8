// Package jsonx is grantwire's one JSON package: every byte of JSON the product writes by
// hand, and every strict reading of JSON it does before encoding/json may see it.
//
//   - canonical writer (canon.go): the canonical form both engines' decisions are written
//     in ([Sorter], [Append], [Marshal]), and the two string escapers ([AppendString],
//     canonical; [AppendGoString], as encoding/json.Marshal escapes) that every encoder
//     takes as a parameter ([Escaper]);
//   - one Go-value encoder ([Encoder]: canonical, or as encoding/json.Marshal writes) and
//     the ledger writer ([Document], encoding/json's indented bytes, cancellable); [NonNil]
//     and [OrEmpty], a nil slice or map encoded as [] or {} rather than null;
//   - strict reader (strict.go): one scanner, its rules and wording a [Grammar]: [Check],
//     exactly one I-JSON document, for files grantwire trusts, and core.CheckQuery's;
//     stored bytes (stored.go): [Decode], how a host reads stored bytes before the core
//     sees them, with its fixed vocabulary of reasons, and the facts made of them;
//   - size measure (size.go): [GoLen] and [GoStringLen], the size of JSON as
//     encoding/json writes it, without writing it;
//   - the scanning pieces the readers share (scan.go).
//
// It imports only the standard library, so that any layer (core, the engines and their
// runtime, hosts, the test world) may use it.
package jsonx
