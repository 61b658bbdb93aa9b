// Package sqlite is the embedded default backend: store.Backend on a single
// local SQLite file (pure Go, modernc.org/sqlite).
package sqlite
