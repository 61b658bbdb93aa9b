// Package archtest holds ARCHITECTURE.md's table of packages against the
// code (TestArchitectureTable): every package of the module has a row, and
// each imports exactly among what its row allows.
package archtest
