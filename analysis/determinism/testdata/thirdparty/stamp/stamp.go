// Package stamp is a library of another module.
package stamp

import "time"

// Now reads the wall clock; calls from another module are not followed.
func Now() string { return time.Now().Format(time.RFC3339) }
