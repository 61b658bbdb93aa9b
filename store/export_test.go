package store

// GCGraceOf exposes gcGrace to the external tests.
var GCGraceOf = gcGrace
