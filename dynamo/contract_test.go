package dynamo_test

import (
	"flag"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/storetest"
)

var flagContractScale = flag.Float64("dynamo.contractscale", 0.3,
	"storetest.RunOptions.Scale on DynamoDB (1 = the full race and model sizes, ~4x slower)")

// TestContract runs the backend-independent contract suite on DynamoDB,
// each subtest on its own freshly created table.
func TestContract(t *testing.T) {
	requireEndpoint(t)
	storetest.RunWith(t, func(t *testing.T, clock core.Clock, blobs core.Cas) store.Backend {
		b, _ := newBackend(t, dynamo.Options{Clock: clock, Cas: blobs})
		return b
	}, storetest.RunOptions{Scale: *flagContractScale, Timeout: 2 * time.Minute, PollInterval: 10 * time.Millisecond})
}
