// Package core holds Stela's pure domain: identifiers, every persisted type
// with its byte-exact JSON wire format, the state machine and the other
// decisions the store makes (lock rules, retry backoff, the timer and
// cancellation decisions), the error taxonomy and the store interfaces
// (DbExecutor, DbConnection, DbExternalApi, Cas). It imports only the
// standard library and ULID, and does no I/O.
//
// The behaviour is specified in docs/spec/semantics.md; a bare section
// number in a comment here (§3.5) refers to that document. The golden files
// in testdata/golden pin the wire format (TestGolden).
package core
