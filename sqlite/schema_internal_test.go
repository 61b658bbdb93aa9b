package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// v2Objects are what migration v2 adds; a file written by the version-1
// build lacks them unless that build created them lazily on first use of
// deployments (it ran the same CREATE … IF NOT EXISTS statements).
// v3Objects undoes migration v3 (the list index keyed by execution id),
// v4Objects migration v4 (retention).
var v4Objects = []string{
	"DROP TABLE t_purge",
	"DROP INDEX idx_execution_backtrace_hash",
	"DROP INDEX idx_state_retention",
	"ALTER TABLE t_state DROP COLUMN finished_recorded_at",
}

var v3Objects = []string{
	"CREATE INDEX idx_state_created ON t_state (created_at, seq)",
	"DROP INDEX idx_state_created_id",
}

var v2Objects = []string{
	"DROP INDEX idx_state_deployment",
	"DROP TABLE t_component_source",
	"DROP TABLE t_deployment_component_file",
	"DROP TABLE t_deployment_file",
	"DROP TABLE t_deployment_component",
	"DROP TABLE t_component_metadata",
	"DROP TABLE t_deployment",
}

// writeV1 leaves at path a version-1 file holding one execution and, when
// withDeployments, the deployment of f (as the version-1 build wrote them:
// same tables, created lazily). It writes through the current code, then
// removes what version 1 did not have and sets user_version = 1.
func writeV1(t *testing.T, path string, blobs core.Cas, f depFixture, withDeployments bool) core.ExecutionId {
	t.Helper()
	ctx := context.Background()
	b, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(b, store.Options{Cas: blobs})
	id := testID(t)
	ffqn, err := core.ParseFunctionFqn("ns:pkg/ifc.fn")
	if err != nil {
		t.Fatal(err)
	}
	req := core.CreateRequest{CreatedAt: core.UnixEpoch, ExecutionID: id, FFQN: ffqn, Params: core.Params{},
		ScheduledAt: core.UnixEpoch, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "c",
			ComponentDigest: f.comp}, DeploymentID: f.dep}
	if _, err := s.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	drop := append(append([]string(nil), v4Objects...), v3Objects...)
	if !withDeployments {
		drop = append(drop, v2Objects...)
	}
	if withDeployments {
		if err := f.insert(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := s.ActivateDeployment(ctx, f.dep, core.UnixEpoch); err != nil {
			t.Fatal(err)
		}
		if err := s.UpsertSourceMapping(ctx, f.comp, "/a.js", true, f.file); err != nil {
			t.Fatal(err)
		}
	}
	err = b.write(ctx, func(tx *writeTx) error {
		for _, q := range append(drop, "PRAGMA user_version = 1") {
			if err := tx.c.exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("downgrade to v1: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestOpeningAVersion1FileUpgradesItKeepingItsData(t *testing.T) {
	for _, withDeployments := range []bool{false, true} {
		name := "WithoutDeploymentTables"
		if withDeployments {
			name = "WithLazilyCreatedDeploymentTables"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "stela.db")
			blobs, err := cas.NewDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			file, err := blobs.WriteBlob(ctx, []byte("console.log(1)"))
			if err != nil {
				t.Fatal(err)
			}
			f := depFixture{dep: core.DeploymentId{}, comp: core.ComponentDigest{Digest: core.SHA256Digest([]byte("component"))},
				file: file, desc: "v1"}
			id := writeV1(t, path, blobs, f, withDeployments)

			b, err := Open(path, Options{})
			if err != nil {
				t.Fatalf("Open v1 file: %v", err)
			}
			s := store.New(b, store.Options{Cas: blobs})
			t.Cleanup(func() { _ = s.Close() })
			var v int
			if err := b.withReader(ctx, func(c *conn) (err error) { v, err = userVersion(ctx, c); return err }); err != nil || v != SchemaVersion {
				t.Fatalf("user_version after open = %d (%v), want %d", v, err, SchemaVersion)
			}
			if got, err := s.GetPendingState(ctx, id); err != nil || got.ExecutionID != id {
				t.Fatalf("execution of the v1 file: %+v, %v", got, err)
			}
			if withDeployments {
				f.check(t, ctx, s, core.UnixEpoch)
			} else {
				if err := f.insert(ctx, s); err != nil {
					t.Fatalf("insert a deployment into the upgraded file: %v", err)
				}
			}
			counts, err := s.ListDeploymentStates(ctx, core.UnixEpoch, core.Pagination[*core.DeploymentId]{Direction: core.OlderThan, Length: 10}, false, core.DeploymentExecutionCounts{})
			if err != nil || len(counts) != 1 || counts[0].Pending != 1 {
				t.Fatalf("counts of the upgraded file: %+v, %v", counts, err)
			}
			if plan := queryPlan(t, b, sqlCountStates, f.dep.String(), tsText(core.UnixEpoch), 1); !strings.Contains(plan, "idx_state_deployment") {
				t.Fatalf("idx_state_deployment missing after the upgrade:\n%s", plan)
			}
		})
	}
}
