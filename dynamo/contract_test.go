package dynamo_test

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/core/coretest"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/store"
)

var flagContractScale = flag.Float64("dynamo.contractscale", 0.3,
	"coretest.RunOptions.Scale on DynamoDB (1 = the full race and model sizes, ~4x slower)")

// TestContract runs the backend-independent contract suite on DynamoDB,
// each subtest on its own freshly created table.
func TestContract(t *testing.T) {
	requireEndpoint(t)
	coretest.RunWith(t, func(t *testing.T, clock core.Clock) coretest.Store {
		if strings.Contains(t.Name(), "/Deployments/") {
			t.Skip("the deployment store is not implemented on DynamoDB yet (deployments.go returns core.ErrNotImplemented)")
		}
		b, _ := newBackend(t, dynamo.Options{Clock: clock})
		s := store.New(b, store.Options{Clock: clock, PollInterval: 10 * time.Millisecond})
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, coretest.RunOptions{Scale: *flagContractScale, Timeout: 2 * time.Minute})
}
