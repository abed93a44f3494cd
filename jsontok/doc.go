// Package jsontok owns JSON tokenizing for the wire: one cursor over the
// bytes of a JSON text, shared by every reader of the public contract's
// JSON that does not go through encoding/json alone (the Go SDK's answer
// decoders, the API's strict request reader, the live channel's ack
// frame reader).
//
// A Tokenizer checks the bytes as encoding/json checks them (white space,
// the structure of objects and arrays with nesting bounded as
// encoding/json bounds it, strings unescaped as encoding/json unescapes
// them, numbers against JSON's grammar, any value skipped with the same
// checks) and knows nothing of the types read from it: a reader of some
// shapes embeds it. Its first error is kept and every step after it does
// nothing, so a walk checks Err once, at the end.
//
// A walk goes: Open('{'), then for first := true; More(&first, '}'); a
// Key() and a value (StringBytes, Number, Literal, Skip or a nested
// Open), then End() once the top-level value is read.
//
// Two readers need less or more than encoding/json's reading of a
// string: a walk begun by ResetStrict refuses what encoding/json would
// rewrite (invalid UTF-8, a lone surrogate), for requests whose ids must
// not collide; PlainString takes printable ASCII without escapes only, for a fast
// path that leaves everything else to a slower reader. Consume and Uint
// serve readers that walk a fixed shape byte by byte.
//
// It imports the standard library only, as the SDK must not pull in the
// server's dependencies.
package jsontok
