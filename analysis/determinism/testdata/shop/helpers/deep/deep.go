// Package deep calls helpers: facts compose across packages.
package deep

import "example.com/shop/helpers"

// Deep reaches the clock through helpers.Stamp.
func Deep() string { return "deep " + helpers.Stamp() } // want Deep:`clock time.Now at example.com/shop/helpers/helpers.go:15:42 via deep.Deep → helpers.Stamp\)$`
