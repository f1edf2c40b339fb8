// Package nativegen compiles a policy's plan (OPA's intermediate representation, from
// `opa build -t plan` or the planner) to Go source on the runtime of
// core/nativeengine/internal/rt. internal/tools/nativegen is its command (`make native`);
// internal/tools/opacases compiles OPA's own test cases with it.
//
// It supports every statement of OPA's IR and the built-in functions the runtime
// implements (functions marked `//rego:builtin NAME` in the runtime's source,
// ScanBuiltins); a plan that needs anything else is refused with an error naming it
// (a *MissingBuiltinsError for built-in functions), never compiled into code that would
// decide differently. It reads plans with OPA's ir package and links nothing else of OPA.
//
// A built-in function's parameters are *rt.V or string: for a string parameter the
// generated call does the type check (an operand that is not a string makes the call
// undefined, as the built-in's own check did) and passes a constant as its Go literal, so
// the runtime's built-ins do not each open with the same check.
package nativegen
