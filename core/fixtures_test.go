package core_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stela-dev/stela/core"
)

// TestObeliskFixturesRoundTrip is an extra check on top of TestGolden: it
// round-trips JSON written by Obelisk itself (its insta snapshots) when a
// copy is available — in the directory named by STELA_OBELISK_FIXTURES, else
// in ../shared/spec/fixtures/obelisk beside the repository, as in CI. A
// clone of the repository alone has no such copy; the test then skips and
// says so (TestGolden still checks every shape from the project's own files).
// When STELA_OBELISK_FIXTURES is set, a missing or empty directory fails.
const defaultFixturesDir = "../../shared/spec/fixtures/obelisk"

// obeliskFixtures returns the Obelisk fixture files, the directory searched,
// and whether that directory was named explicitly.
func obeliskFixtures() (files []string, dir string, explicit bool) {
	dir, explicit = os.LookupEnv("STELA_OBELISK_FIXTURES")
	if !explicit {
		dir = defaultFixturesDir
	}
	files, _ = filepath.Glob(filepath.Join(dir, "*.json"))
	sort.Strings(files)
	return files, dir, explicit
}

// Snapshot-only shapes: Obelisk's test harness serialised these wrappers
// around storage types. They are not part of the store API; the golden files
// use them too, so the shapes stay covered without Obelisk's copies.
type (
	logSnapshot struct {
		ExecutionID     core.ExecutionId                 `json:"execution_id"`
		Events          []core.ExecutionEvent            `json:"events"`
		Responses       []core.JoinSetResponseEventOuter `json:"responses"`
		NextVersion     core.Version                     `json:"next_version"`
		PendingState    core.PendingState                `json:"pending_state"`
		ComponentDigest core.ComponentDigest             `json:"component_digest"`
	}
	advanceSnapshot struct {
		Finished                   bool `json:"finished"`
		RequestedCapturedWritesLen int  `json:"requested_captured_writes_len"`
		ReplayedCapturedWritesLen  int  `json:"replayed_captured_writes_len"`
	}
	replaySnapshot struct {
		CapturedWrites []core.CapturedDbWrite `json:"captured_writes"`
	}
	// web API DTOs (GET /v1/executions/{id}/logs and GET /v1/components)
	webLogItem struct {
		Cursor      string           `json:"cursor"`
		RunID       core.RunId       `json:"run_id"`
		ExecutionID core.ExecutionId `json:"execution_id"`
		Type        string           `json:"type"`
		CreatedAt   core.Timestamp   `json:"created_at"`
		Level       string           `json:"level"`
		Message     string           `json:"message"`
	}
	webComponent struct {
		ComponentID core.ComponentId                     `json:"component_id"`
		Files       []core.DeploymentComponentFileDetail `json:"files"`
	}
)

// placeholders are the redactions insta applied. Each is swapped for a unique
// valid value before decoding and swapped back after encoding, so the typed
// values still have to parse and re-render exactly.
var placeholders = [][2]string{
	{`"<TIMESTAMP>"`, `"2999-12-31T23:59:59.987654321Z"`},
	{`"E_<REDACTED>"`, `"E_7ZZZZZZZZZZZZZZZZZZZZZZZZZ"`},
	{`"Dep_<REDACTED>"`, `"Dep_7ZZZZZZZZZZZZZZZZZZZZZZZZY"`},
	{`"Exr_<REDACTED>"`, `"Exr_7ZZZZZZZZZZZZZZZZZZZZZZZZX"`},
	{`"Run_<REDACTED>"`, `"Run_7ZZZZZZZZZZZZZZZZZZZZZZZZW"`},
	{`"sha256:<REDACTED>"`, `"sha256:` + strings.Repeat("e7", 32) + `"`},
}

func target(keys []string, isList bool) any {
	k := strings.Join(keys, ",")
	switch {
	case isList && strings.HasPrefix(k, "cursor,"):
		return &[]webLogItem{}
	case isList && strings.HasPrefix(k, "component_id,"):
		return &[]webComponent{}
	case k == "execution_id,events,responses,next_version,pending_state,component_digest":
		return &logSnapshot{}
	case k == "finished,requested_captured_writes_len,replayed_captured_writes_len":
		return &advanceSnapshot{}
	case k == "captured_writes":
		return &replaySnapshot{}
	case k == "type,value":
		return &core.WastValWithType{}
	case k == "events,max_version":
		return &core.ListExecutionEventsResponse{}
	case k == "execution_id,ffqn,pending_state,created_at,first_scheduled_at,component_digest,component_type,deployment_id":
		return &core.ExecutionWithState{}
	}
	return nil
}

// topKeys returns the keys of the top-level object (or of the first element
// of a top-level array) in document order.
func topKeys(t *testing.T, b []byte) ([]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		t.Fatal(err)
	}
	isList := tok == json.Delim('[')
	if isList {
		if tok, err = dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("expected a list of objects")
		}
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys, isList
}

func TestObeliskFixturesRoundTrip(t *testing.T) {
	files, dir, explicit := obeliskFixtures()
	if len(files) == 0 {
		if explicit {
			t.Fatalf("STELA_OBELISK_FIXTURES=%s holds no *.json fixtures", dir)
		}
		t.Skipf("Obelisk's own fixtures not found in %s (only beside a checkout with ../shared, e.g. CI); TestGolden covers the same shapes", dir)
	}
	t.Logf("checking %d Obelisk fixtures from %s", len(files), dir)
	passed := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			orig, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := json.Compact(&want, orig); err != nil {
				t.Fatal(err)
			}
			subst := want.String()
			for _, p := range placeholders {
				subst = strings.ReplaceAll(subst, p[0], p[1])
			}
			keys, isList := topKeys(t, []byte(subst))
			v := target(keys, isList)
			if v == nil {
				t.Fatalf("no Stela type for fixture shape %v", keys)
			}
			if err := json.Unmarshal([]byte(subst), v); err != nil {
				t.Fatalf("decode: %v", err)
			}
			got, err := core.MarshalJSON(v)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			gotS := string(got)
			for _, p := range placeholders {
				gotS = strings.ReplaceAll(gotS, p[1], p[0])
			}
			if gotS != want.String() {
				t.Fatalf("round trip differs\n got: %s\nwant: %s", gotS, want.String())
			}
			// Pretty form equals serde_json::to_string_pretty's.
			pretty, err := core.MarshalJSONIndent(v)
			if err != nil {
				t.Fatal(err)
			}
			prettyS := string(pretty)
			for _, p := range placeholders {
				prettyS = strings.ReplaceAll(prettyS, p[1], p[0])
			}
			if prettyS != strings.TrimRight(string(orig), "\n") {
				t.Fatalf("pretty form differs\n got: %s\nwant: %s", prettyS, orig)
			}
			passed++
		})
	}
	t.Logf("%d/%d Obelisk fixtures round-trip byte-exactly", passed, len(files))
}
