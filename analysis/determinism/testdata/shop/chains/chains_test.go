package chains

import (
	"testing"
	"time"

	"github.com/stela-dev/stela/worker"
)

// Workflows in test files are workflow code too (go vet checks test files).
func TestRegister(t *testing.T) {
	worker.Workflow(nil, "shop:chains/workflow.test", func(wf *worker.Context, _ worker.Unit) (int64, error) {
		return time.Now().Unix(), nil // want `^time.Now in workflow "shop:chains/workflow.test":`
	})
}
