package dynamo_test

import (
	"flag"
	"testing"
	"time"

	"github.com/stela-dev/stela/cas"
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
	storetest.RunWith(t, func(t *testing.T, clock core.Clock) storetest.Store {
		blobs, err := cas.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := newBackend(t, dynamo.Options{Clock: clock, Cas: blobs})
		s := store.New(b, store.Options{Clock: clock, PollInterval: 10 * time.Millisecond})
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, storetest.RunOptions{Scale: *flagContractScale, Timeout: 2 * time.Minute})
}
