package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/internal/apitest"
	"github.com/stela-dev/stela/internal/backendtest"
)

// TestUpgradeWalkThrough: v1 orders reserve and wait, v2 starts beside it,
// the v1 orders are upgraded after replaying cleanly on v2 (the patch keeps
// their path), and every order finishes: v1 orders reserved, v2 orders
// charged.
func TestUpgradeWalkThrough(t *testing.T) {
	svc := backendtest.SQLite(t)
	url := apitest.Server(t, svc)
	backendtest.Timers(t, svc, 50*time.Millisecond)
	var out, errb bytes.Buffer
	if code := run([]string{"upgrade", "--url", url, "--orders", "2", "--wait", "1500ms"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.V1Deployment == rep.V2Deployment || rep.V1Digest == rep.V2Digest || len(rep.Diverged) != 0 || len(rep.Results) != 4 {
		t.Fatalf("report %+v\n%s", rep, errb.String())
	}
	if rep.Upgraded != 2 {
		t.Errorf("upgraded %d v1 orders, want 2 (they wait %s)\n%s", rep.Upgraded, "1500ms", errb.String())
	}
	// The moves were the server's checked upgrade: one replay check per v1
	// order, run by v2's worker, each finished "upgraded".
	checks, err := svc.ListExecutions(context.Background(), core.ListExecutionsFilter{ComponentDigest: &rep.V2Digest},
		core.ExecutionListPagination{ExecutionID: &core.Pagination[*core.ExecutionId]{Direction: core.OlderThan, Length: 100}})
	if err != nil {
		t.Fatal(err)
	}
	upgraded := 0
	for _, c := range checks {
		if c.FFQN.String() != core.UpgradeCheckFFQN {
			continue
		}
		rv, err := svc.WaitForFinishedResult(context.Background(), c.ExecutionID)
		if err != nil {
			t.Fatalf("check %s: %v", c.ExecutionID, err)
		}
		if res, err := core.ParseUpgradeCheckResult(rv); err != nil || res.Outcome != core.UpgradeMoved {
			t.Fatalf("check %s: %+v, %v", c.ExecutionID, res, err)
		}
		upgraded++
	}
	if upgraded != 2 {
		t.Errorf("%d replay checks upgraded an order, want 2", upgraded)
	}
	for id, r := range rep.Results {
		v1 := strings.Contains(r, "(v1-order-")
		if v1 && !strings.HasPrefix(r, ReserveFFQN) || !v1 && !strings.HasPrefix(r, ChargeFFQN) || !strings.Contains(r, ShipFFQN) {
			t.Errorf("%s: %q", id, r)
		}
	}
}
