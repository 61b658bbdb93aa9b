package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// queryPlan returns SQLite's EXPLAIN QUERY PLAN of q, one detail per line.
func queryPlan(t *testing.T, b *Backend, q string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	var plan []string
	err := b.withReader(ctx, func(c *conn) error {
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
		name, q string
		indexes []string
		args    []any
	}{
		{"CountStates", sqlCountStates, []string{"idx_state_deployment"}, []any{dep, tsText(core.UnixEpoch), 1}},
		{"GCReferences", sqlReferenced, []string{"idx_deployment_file_digest", "idx_component_source_digest"}, []any{digest}},
		{"SourceMapping", sqlSource, []string{"PRIMARY KEY (component_digest=? AND frame_key=? AND is_suffix=?)"}, []any{digest, "a/b.rs", 1}},
		{"Components", sqlComponents, []string{"PRIMARY KEY (deployment_id=?)"}, []any{dep}},
		{"ComponentFiles", sqlComponentFiles, []string{"PRIMARY KEY (deployment_id=?)"}, []any{dep}},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan := queryPlan(t, b, c.q, c.args...)
			for _, index := range c.indexes {
				if !strings.Contains(plan, index) || strings.Contains(plan, "SCAN t_") {
					t.Fatalf("plan does not use %s:\n%s", index, plan)
				}
			}
		})
	}
}

// depFixture is a deployment with one component, its file and its metadata.
type depFixture struct {
	dep  core.DeploymentId
	comp core.ComponentDigest
	file core.ContentDigest
	desc string
}

func (f depFixture) insert(ctx context.Context, s *store.Service) error {
	rec := core.DeploymentRecord{DeploymentID: f.dep, Description: &f.desc, Digest: core.ContentDigestOf([]byte("{}")),
		CreatedAt: core.UnixEpoch, Status: core.DeploymentInactive, DeploymentToml: "{}", ObeliskVersion: "1",
		Files: []core.DeploymentFileRecord{{Path: "a.js", Digest: f.file}}}
	return s.InsertDeploymentWithComponents(ctx, rec,
		[]core.ComponentMetadataRecord{{ComponentDigest: f.comp, Wit: "package a:b;", WitOrigin: core.WitOriginAuthored}},
		[]core.DeploymentComponentRecord{{DeploymentID: f.dep, ComponentName: "c", ComponentDigest: f.comp, ComponentType: core.ComponentTypeActivity}},
		[]core.DeploymentComponentFileRecord{{ComponentName: "c", Path: "a.js", Role: core.RoleJsEntrypoint}})
}

// check reads the deployment back through s.
func (f depFixture) check(t *testing.T, ctx context.Context, s *store.Service, activeAt core.Timestamp) {
	t.Helper()
	got, err := s.GetCurrentDeployment(ctx)
	if err != nil {
		t.Fatalf("GetCurrentDeployment: %v", err)
	}
	if got.Status != core.DeploymentActive || !got.LastActiveAt.Equal(activeAt) || *got.Description != f.desc ||
		len(got.Files) != 1 || got.Files[0].Size != 14 {
		t.Fatalf("deployment: %+v", got)
	}
	cs, err := s.ListDeploymentComponents(ctx, f.dep)
	if err != nil || len(cs) != 1 || len(cs[0].Files) != 1 || cs[0].Wit != "package a:b;" {
		t.Fatalf("components: %+v, %v", cs, err)
	}
	if d, err := s.ResolveSourceDigest(ctx, f.comp, "src/a.js"); err != nil || d != f.file {
		t.Fatalf("ResolveSourceDigest: %s, %v", d, err)
	}
}

func TestDeploymentsSurviveReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "stela.db")
	blobs, err := cas.NewDir(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	open := func() *store.Service {
		b, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return store.New(b, store.Options{Cas: blobs})
	}
	file, err := blobs.WriteBlob(ctx, []byte("console.log(1)"))
	if err != nil {
		t.Fatal(err)
	}
	f := depFixture{dep: core.DeploymentId{}, comp: core.ComponentDigest{Digest: core.SHA256Digest([]byte("component"))},
		file: file, desc: "kept"}
	s := open()
	if err := f.insert(ctx, s); err != nil {
		t.Fatal(err)
	}
	at := core.UnixEpoch.Add(time.Hour)
	if err := s.ActivateDeployment(ctx, f.dep, at); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertSourceMapping(ctx, f.comp, "/a.js", true, file); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	t.Cleanup(func() { _ = s.Close() })
	f.check(t, ctx, s, at)
}
