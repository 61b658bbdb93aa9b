package stelacdk

import (
	"fmt"
	"os"
	"path/filepath"
)

// WritePlaceholder writes a stand-in bootstrap (a shell script that exits 1)
// at path, so that the stack synthesizes without cross-compiled binaries.
func WritePlaceholder(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("placeholder %s: %w", path, err)
	}
	const stub = "#!/bin/sh\necho 'placeholder bootstrap: build the function with scripts/build-lambdas.sh' >&2\nexit 1\n"
	if err := os.WriteFile(path, []byte(stub), 0o755); err != nil {
		return fmt.Errorf("placeholder %s: %w", path, err)
	}
	return nil
}
