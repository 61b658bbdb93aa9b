package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
)

// queryPlan returns SQLite's EXPLAIN QUERY PLAN of q, one detail per line.
func queryPlan(t *testing.T, b *Backend, q string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	if err := b.ensureDeployments(ctx); err != nil {
		t.Fatal(err)
	}
	var plan []string
	err := b.withReader(ctx, func(c *conn) error {
		// A reader opened before the deployment tables existed plans with
		// its cached schema until it reads the schema again.
		if _, err := c.c.ExecContext(ctx, "SELECT count(*) FROM sqlite_schema"); err != nil {
			return err
		}
		rows, err := c.c.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				return err
			}
			plan = append(plan, detail)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	return strings.Join(plan, "\n")
}

// The deployment queries must be index range scans, never a scan of
// t_state or of a whole deployment table.
func TestDeploymentQueriesUseIndexes(t *testing.T) {
	b := openInternal(t)
	dep, digest := core.DeploymentId{}.String(), make([]byte, 32)
	for _, c := range []struct {
		name, q, index string
		args           []any
	}{
		{"CountStates", sqlCountStates, "idx_state_deployment", []any{dep, tsText(core.UnixEpoch), 1}},
		{"GCDeploymentFileReference", sqlFileReferenced, "idx_deployment_file_digest", []any{digest}},
		{"GCSourceReference", sqlSourceReferenced, "idx_component_source_digest", []any{digest}},
		{"ResolveSource", sqlResolveSource, "PRIMARY KEY (component_digest=?)", []any{digest, "a/b.rs"}},
		{"ComponentWit", sqlComponentWit, "idx_deployment_component_digest", []any{dep, digest}},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan := queryPlan(t, b, c.q, c.args...)
			if !strings.Contains(plan, c.index) || strings.Contains(plan, "SCAN t_state") {
				t.Fatalf("plan does not use %s:\n%s", c.index, plan)
			}
		})
	}
}

func TestDefaultCasIsTheBlobsDirectoryBesideTheDatabase(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(filepath.Join(dir, "stela.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	d, err := b.Cas().WriteBlob(context.Background(), []byte("beside the database"))
	if err != nil {
		t.Fatalf("WriteBlob: %v", err)
	}
	want, err := cas.NewDir(filepath.Join(dir, DefaultCasDir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(want.Path(d)); err != nil {
		t.Fatalf("blob not in %s: %v", filepath.Join(dir, DefaultCasDir), err)
	}
}

func TestDeploymentsSurviveReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "stela.db")
	blobs, err := cas.NewDir(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	open := func() *Backend {
		b, err := Open(path, Options{Cas: blobs})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	file, err := blobs.WriteBlob(ctx, []byte("console.log(1)"))
	if err != nil {
		t.Fatal(err)
	}
	dep := core.DeploymentId{}
	comp := core.ComponentDigest{Digest: core.SHA256Digest([]byte("component"))}
	desc := "kept"
	rec := core.DeploymentRecord{DeploymentID: dep, Description: &desc, Digest: core.ContentDigestOf([]byte("{}")),
		CreatedAt: core.UnixEpoch, Status: core.DeploymentInactive, DeploymentToml: "{}", ObeliskVersion: "1",
		Files: []core.DeploymentFileRecord{{Path: "a.js", Digest: file}}}
	b := open()
	if err := b.InsertDeploymentWithComponents(ctx, rec,
		[]core.ComponentMetadataRecord{{ComponentDigest: comp, Wit: "package a:b;", WitOrigin: core.WitOriginAuthored}},
		[]core.DeploymentComponentRecord{{DeploymentID: dep, ComponentName: "c", ComponentDigest: comp, ComponentType: core.ComponentTypeActivity}},
		[]core.DeploymentComponentFileRecord{{ComponentName: "c", Path: "a.js", Role: core.RoleJsEntrypoint}}); err != nil {
		t.Fatal(err)
	}
	at := core.UnixEpoch.Add(time.Hour)
	if err := b.ActivateDeployment(ctx, dep, at); err != nil {
		t.Fatal(err)
	}
	if err := b.UpsertSourceMapping(ctx, comp, "/a.js", true, file); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = open()
	t.Cleanup(func() { _ = b.Close() })
	got, err := b.GetCurrentDeployment(ctx)
	if err != nil {
		t.Fatalf("GetCurrentDeployment after reopen: %v", err)
	}
	if got.Status != core.DeploymentActive || !got.LastActiveAt.Equal(at) || *got.Description != desc ||
		len(got.Files) != 1 || got.Files[0].Size != 14 {
		t.Fatalf("deployment after reopen: %+v", got)
	}
	cs, err := b.ListDeploymentComponents(ctx, dep)
	if err != nil || len(cs) != 1 || len(cs[0].Files) != 1 || cs[0].Wit != "package a:b;" {
		t.Fatalf("components after reopen: %+v, %v", cs, err)
	}
	if d, err := b.ResolveSourceDigest(ctx, comp, "src/a.js"); err != nil || d != file {
		t.Fatalf("ResolveSourceDigest after reopen: %s, %v", d, err)
	}
}
