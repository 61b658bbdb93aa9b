package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/httpapi"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
)

// TestPublicRoutes drives every public route through the client against the
// real handler on the embedded store with an active deployment.
func TestPublicRoutes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	blobs, err := cas.NewDir(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := sqlite.Open(filepath.Join(dir, "stela.db"), sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	svc := store.New(b, store.Options{Cas: blobs, PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { _ = svc.Close() })
	srv := httptest.NewServer(httpapi.New(svc, blobs, httpapi.Options{Authorizer: httpapi.AllowAll(), FollowWait: time.Second,
		Sweep: func(ctx context.Context, at core.Timestamp) (any, error) { return store.Sweep(ctx, svc, at) }}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// A deployment: an activity, a cancellable workflow and a stub.
	file, err := blobs.WriteBlob(ctx, []byte("export default 1"))
	must(err)
	dep, err := core.NewDeploymentId(uint64(time.Now().UnixMilli()), strings.NewReader(strings.Repeat("d", 10)))
	must(err)
	ffqnCancellable := mustFFQN("test:sdk/ifc.workflow-cancellable")
	digests := map[string]core.ComponentDigest{}
	for _, n := range []string{"act", "wf", "stub", "act2"} {
		digests[n] = core.ComponentDigest{Digest: core.SHA256Digest([]byte(n))}
	}
	must(svc.InsertDeploymentWithComponents(ctx,
		core.DeploymentRecord{DeploymentID: dep, Digest: core.ContentDigestOf([]byte("toml")), CreatedAt: core.TS(time.Now()),
			Status: core.DeploymentInactive, DeploymentToml: "[[activity]]\n", ObeliskVersion: "1",
			Files: []core.DeploymentFileRecord{{Path: "act.js", Digest: file}}},
		[]core.ComponentMetadataRecord{
			{ComponentDigest: digests["act"], Wit: "package test:sdk;", WitOrigin: core.WitOriginAuthored,
				Exports: []core.PersistedFunctionMetadata{{FFQN: ffqnActivity, ParameterTypes: []core.PersistedParameterType{{Name: "n", WitType: "u64"}}, ReturnType: "result<string>", Submittable: true}}},
			{ComponentDigest: digests["wf"], Wit: "package test:wf;", WitOrigin: core.WitOriginAuthored,
				Exports: []core.PersistedFunctionMetadata{{FFQN: ffqnWorkflow, ReturnType: "result", Submittable: true},
					{FFQN: ffqnCancellable, ReturnType: "result", Submittable: true}}},
			{ComponentDigest: digests["stub"], Wit: "package test:stub;", WitOrigin: core.WitOriginAuthored,
				Exports: []core.PersistedFunctionMetadata{{FFQN: ffqnStub, ReturnType: "result<string>"}}},
		},
		[]core.DeploymentComponentRecord{
			{DeploymentID: dep, ComponentName: "act", ComponentDigest: digests["act"], ComponentType: core.ComponentTypeActivity},
			{DeploymentID: dep, ComponentName: "wf", ComponentDigest: digests["wf"], ComponentType: core.ComponentTypeWorkflow},
			{DeploymentID: dep, ComponentName: "stub", ComponentDigest: digests["stub"], ComponentType: core.ComponentTypeActivityStub},
		},
		[]core.DeploymentComponentFileRecord{{ComponentName: "act", Path: "act.js", Role: core.RoleJsEntrypoint}}))
	must(svc.ActivateDeployment(ctx, dep, core.TS(time.Now())))

	t.Run("Deployments", func(t *testing.T) {
		if got, err := c.GetCurrentDeploymentID(ctx); err != nil || got != dep {
			t.Fatalf("GetCurrentDeploymentID = %s, %v", got, err)
		}
		list, err := c.ListDeployments(ctx, client.DeploymentQuery{IncludeComponentSummary: true})
		must(err)
		if len(list) != 1 || list[0].DeploymentID != dep || list[0].ComponentSummary == nil || len(list[0].ComponentSummary.Components) != 3 ||
			list[0].Core().Status != core.DeploymentActive {
			t.Fatalf("ListDeployments = %+v", list)
		}
		d, err := c.GetDeployment(ctx, dep)
		if err != nil || d.DeploymentToml != "[[activity]]\n" || len(d.Files) != 1 || d.Files[0].Size != 16 {
			t.Fatalf("GetDeployment = %+v, %v", d, err)
		}
		if _, err := c.GetDeployment(ctx, core.DeploymentId{}); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("GetDeployment(unknown): %v", err)
		}
		comps, err := c.ListComponents(ctx, client.ComponentQuery{Exports: true})
		must(err)
		if len(comps) != 3 || comps[0].Exports == nil {
			t.Fatalf("ListComponents = %+v", comps)
		}
		f := ffqnCancellable
		comps, err = c.ListComponents(ctx, client.ComponentQuery{DeploymentID: &dep, Type: core.ComponentTypeWorkflow, FFQN: &f})
		must(err)
		if len(comps) != 1 || comps[0].ComponentID.Name != "wf" || comps[0].Exports != nil {
			t.Fatalf("ListComponents(workflow) = %+v", comps)
		}
		if wit, err := c.GetComponentWit(ctx, digests["act"], nil); err != nil || wit != "package test:sdk;" {
			t.Fatalf("GetComponentWit = %q, %v", wit, err)
		}
		if _, err := c.GetComponentWit(ctx, digests["act2"], &dep); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("GetComponentWit(unknown): %v", err)
		}
		if got, err := c.GetFile(ctx, file); err != nil || string(got) != "export default 1" {
			t.Fatalf("GetFile = %q, %v", got, err)
		}
	})

	var act, other core.ExecutionId
	t.Run("SubmitAndResult", func(t *testing.T) {
		req := client.SubmitRequest{FFQN: ffqnActivity, Params: core.Params{json.RawMessage(`1`)}}
		act, err = c.SubmitNew(ctx, req)
		must(err)
		if created, err := c.Submit(ctx, act, req); err != nil || created {
			t.Fatalf("resubmit = %v, %v; want an idempotent 200", created, err)
		}
		if _, err := c.Submit(ctx, act, client.SubmitRequest{FFQN: ffqnActivity, Params: core.Params{json.RawMessage(`2`)}}); !errors.Is(err, core.ErrConflict) {
			t.Fatalf("resubmit with other params: %v, want ErrConflict", err)
		}
		if _, err := c.SubmitNew(ctx, client.SubmitRequest{FFQN: mustFFQN("test:sdk/ifc.nope")}); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("unknown ffqn: %v, want ErrNotFound", err)
		}
		if id, err := c.GenerateExecutionID(ctx); err != nil || !id.IsTopLevel() {
			t.Fatalf("GenerateExecutionID = %s, %v", id, err)
		}
		if _, err := c.Result(ctx, act); !errors.Is(err, client.ErrNotFinished) {
			t.Fatalf("Result of a pending execution: %v", err)
		}
		other, err = c.SubmitNew(ctx, client.SubmitRequest{FFQN: ffqnActivity, Params: core.Params{json.RawMessage(`2`)}})
		must(err)
		now := core.TS(time.Now())
		exr, _ := core.NewExecutorId(1, strings.NewReader(strings.Repeat("e", 10)))
		locked, err := c.LockOne(ctx, core.LockRequest{CreatedAt: now, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity, Name: "act", ComponentDigest: digests["act"]},
			DeploymentID: dep, ExecutorID: exr, LockExpiresAt: now.Add(time.Minute)}, act, 1)
		must(err)
		if _, err := c.Append(ctx, act, locked.NextVersion, core.AppendRequest{CreatedAt: now, Event: &core.Finished{Retval: okString("one")}}); err != nil {
			t.Fatal(err)
		}
		if raw, err := c.Result(ctx, act); err != nil || string(raw) != `{"ok":"one"}` {
			t.Fatalf("Result = %s, %v", raw, err)
		}
	})
	t.Run("Listings", func(t *testing.T) {
		list, err := c.ListExecutions(ctx, core.ListExecutionsFilter{FunctionName: &core.FunctionNameFilter{Kind: "function", Value: ffqnActivity.String()}},
			core.DefaultExecutionListPagination())
		must(err)
		if len(list) != 2 || list[0].ExecutionID != other || list[1].ExecutionID != act {
			t.Fatalf("ListExecutions = %+v", list)
		}
		list, err = c.ListExecutions(ctx, core.ListExecutionsFilter{HideFinished: true, DeploymentID: &dep}, core.DefaultExecutionListPagination())
		must(err)
		if len(list) != 1 || list[0].ExecutionID != other {
			t.Fatalf("ListExecutions(hide finished) = %+v", list)
		}
		if _, err := c.ListExecutions(ctx, core.ListExecutionsFilter{StateFilters: []core.StateFilter{core.FilterPending}}, core.DefaultExecutionListPagination()); !errors.Is(err, core.ErrValidation) {
			t.Fatalf("state filter: %v, want a ValidationError", err)
		}
		var all []core.ExecutionId
		for e, err := range c.Executions(ctx, core.ListExecutionsFilter{}, 1) {
			must(err)
			all = append(all, e.ExecutionID)
		}
		if !slices.Equal(all, []core.ExecutionId{other, act}) {
			t.Fatalf("Executions = %v", all)
		}
		page, err := c.ListExecutionEvents(ctx, act, core.Pagination[core.Version]{Direction: core.NewerThan, Length: 2, Cursor: 1, IncludingCursor: true}, false)
		if err != nil || len(page.Events) != 2 || page.Events[0].Version != 1 || page.MaxVersion != 2 {
			t.Fatalf("ListExecutionEvents = %+v, %v", page, err)
		}
		if _, err := c.ListExecutionEvents(ctx, act, core.Pagination[core.Version]{Direction: core.NewerThan}, false); !errors.Is(err, core.ErrValidation) {
			t.Fatalf("zero length: %v", err)
		}
	})
	t.Run("Logs", func(t *testing.T) {
		now := core.TS(time.Now())
		var rows []core.LogInfoAppendRow
		for i, lv := range []core.LogLevel{core.LogDebug, core.LogInfo, core.LogError} {
			rows = append(rows, core.LogInfoAppendRow{ExecutionID: act, Entry: core.LogEntry{CreatedAt: now.Add(time.Duration(i)), Level: lv, Message: "m"}})
		}
		rows = append(rows, core.LogInfoAppendRow{ExecutionID: act, Entry: core.LogEntry{CreatedAt: now, StreamType: core.StreamStderr, Payload: []byte("oops\n")}})
		must(c.AppendLogBatch(ctx, rows))
		filter := core.LogFilter{ShowLogs: true, ShowStreams: true, Levels: []core.LogLevel{core.LogInfo, core.LogError}}
		p := core.Pagination[core.LogCursor]{Direction: core.NewerThan, Length: 2, Cursor: core.LogCursorMin}
		first, err := c.ListLogs(ctx, act, false, filter, p)
		must(err)
		if len(first.Items) != 2 || first.Items[0].Entry.Level != core.LogInfo {
			t.Fatalf("ListLogs page 1 = %+v", first.Items)
		}
		second, err := c.ListLogs(ctx, act, false, filter, first.NextPage)
		must(err)
		if len(second.Items) != 1 || string(second.Items[0].Entry.Payload) != "oops\n" || second.Items[0].Entry.StreamType != core.StreamStderr {
			t.Fatalf("ListLogs page 2 = %+v", second.Items)
		}
	})

	// A workflow with a stub child and a delay, for the remaining routes.
	wf, err := c.SubmitNew(ctx, client.SubmitRequest{FFQN: ffqnCancellable})
	must(err)
	now := core.TS(time.Now())
	wfComp := core.ComponentId{ComponentType: core.ComponentTypeWorkflow, Name: "wf", ComponentDigest: digests["wf"]}
	exr, _ := core.NewExecutorId(2, strings.NewReader(strings.Repeat("w", 10)))
	_, err = c.LockOne(ctx, core.LockRequest{CreatedAt: now, ComponentID: wfComp, DeploymentID: dep, ExecutorID: exr, LockExpiresAt: now.Add(time.Minute)}, wf, 1)
	must(err)
	var ids core.IdCounter
	named, _ := core.NamedJoinSetId("signals")
	stub := ids.NextChild(wf, named)
	delayJS, _ := ids.NextOneOffJoinSet("sleep")
	delay := ids.NextDelay(wf, delayJS)
	_, err = c.AppendBatchCreateNewExecution(ctx, now, []core.AppendRequest{
		hist(now, &core.JoinSetCreate{JoinSetID: named}),
		hist(now, &core.JoinSetRequestEvent{JoinSetID: named, Request: &core.ChildExecutionRequest{ChildExecutionID: core.ExecutionIdDerived{ExecutionId: stub}, TargetFFQN: ffqnStub, Params: core.Params{}}}),
		hist(now, &core.JoinSetCreate{JoinSetID: delayJS}),
		hist(now, &core.JoinSetRequestEvent{JoinSetID: delayJS, Request: &core.DelayRequest{DelayID: delay, ExpiresAt: now.Add(time.Hour), ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(time.Hour)}}}),
		hist(now, &core.JoinNext{JoinSetID: delayJS, RunExpiresAt: now}),
	}, wf, 2, []core.CreateRequest{{CreatedAt: now, ExecutionID: stub, FFQN: ffqnStub, Params: core.Params{}, Parent: &core.Parent{ExecutionID: wf, JoinSetID: named},
		ScheduledAt: now, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivityStub, Name: "stub", ComponentDigest: digests["stub"]}, DeploymentID: dep, Metadata: core.ExecutionMetadata{}}}, nil)
	must(err)

	t.Run("StubAndResponses", func(t *testing.T) {
		sid := core.ExecutionIdDerived{ExecutionId: stub}
		must(c.Stub(ctx, sid, okString("s")))
		must(c.Stub(ctx, sid, okString("s")))
		if err := c.Stub(ctx, sid, okString("t")); !errors.Is(err, core.ErrConflict) {
			t.Fatalf("Stub with another value: %v, want ErrConflict", err)
		}
		page, err := c.ListResponses(ctx, wf, core.Pagination[core.ResponseCursor]{Direction: core.NewerThan, Length: 10}, &named)
		if err != nil || len(page.Responses) != 1 || page.MaxCursor != 1 {
			t.Fatalf("ListResponses = %+v, %v", page, err)
		}
		if _, err := c.ListResponses(ctx, wf, core.Pagination[core.ResponseCursor]{Direction: core.NewerThan, Length: 10}, &delayJS); !errors.Is(err, core.ErrValidation) {
			t.Fatalf("ListResponses by a one-off join set: %v", err)
		}
	})
	t.Run("Delays", func(t *testing.T) {
		must(c.PauseDelay(ctx, delay))
		must(c.UnpauseDelay(ctx, delay))
		if out, err := c.CancelDelay(ctx, delay); err != nil || out != core.DelayCancelled {
			t.Fatalf("CancelDelay = %v, %v", out, err)
		}
		if out, err := c.CancelDelay(ctx, delay); err != nil || out != core.DelayCancelled {
			t.Fatalf("CancelDelay again = %v, %v", out, err)
		}
		if err := c.PauseDelay(ctx, delay); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("PauseDelay of a gone delay: %v", err)
		}
	})
	t.Run("PauseUpgradeCancel", func(t *testing.T) {
		must(c.Pause(ctx, other))
		var is *core.IllegalStateError
		if err := c.Pause(ctx, other); !errors.As(err, &is) {
			t.Fatalf("Pause twice: %v, want IllegalStateError", err)
		}
		must(c.Unpause(ctx, other))
		must(c.Upgrade(ctx, other, digests["act"], digests["act2"]))
		if st, err := c.GetPendingState(ctx, other); err != nil || st.ComponentDigest != digests["act2"] {
			t.Fatalf("after Upgrade: %+v, %v", st, err)
		}
		if out, err := c.Cancel(ctx, other); err != nil || out != core.CancelRequested {
			t.Fatalf("Cancel = %v, %v", out, err)
		}
		if out, err := c.Cancel(ctx, act); err != nil || out != core.CancelAlreadyFinished {
			t.Fatalf("Cancel of a finished execution = %v, %v", out, err)
		}
		if out, err := c.Cancel(ctx, wf); err != nil || out != core.CancelRequested {
			t.Fatalf("Cancel of a workflow = %v, %v", out, err)
		}
		if out, err := c.Cancel(ctx, wf); err != nil || out != core.CancelAlreadyCancelling {
			t.Fatalf("Cancel twice = %v, %v", out, err)
		}
	})
	t.Run("Backtraces", func(t *testing.T) {
		src, err := blobs.WriteBlob(ctx, []byte("fn main() {}\n"))
		must(err)
		must(svc.UpsertSourceMapping(ctx, digests["wf"], "src/lib.rs", false, src))
		file, line := "src/lib.rs", uint32(1)
		for _, r := range [][2]core.Version{{1, 3}, {3, 7}} {
			_, err := c.AppendBacktraceBatch(ctx, []core.BacktraceInfo{{ExecutionID: wf, ComponentID: wfComp, VersionMinIncluding: r[0], VersionMaxExcluding: r[1],
				WasmBacktrace: core.WasmBacktrace{Frames: []core.FrameInfo{{Module: "m", FuncName: "f", Symbols: []core.FrameSymbol{{File: &file, Line: &line}}}}}}})
			must(err)
		}
		for filter, want := range map[core.BacktraceFilter]core.Version{{}: 3, {Kind: "first"}: 1, {Kind: "specific", Specific: 4}: 3} {
			bt, err := c.GetBacktrace(ctx, wf, filter)
			if err != nil || bt.VersionMinIncluding != want {
				t.Fatalf("GetBacktrace(%+v) = %+v, %v", filter, bt, err)
			}
		}
		if s, err := c.GetBacktraceSource(ctx, wf, "src/lib.rs", core.BacktraceFilter{}); err != nil || s != "fn main() {}\n" {
			t.Fatalf("GetBacktraceSource = %q, %v", s, err)
		}
		if _, err := c.GetBacktrace(ctx, act, core.BacktraceFilter{}); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("GetBacktrace without one: %v", err)
		}
	})
	t.Run("OpenAPIAndSweep", func(t *testing.T) {
		doc, err := c.OpenAPI(ctx)
		if err != nil || !strings.Contains(string(doc), `"openapi":"3.1.0"`) && !strings.Contains(string(doc), `"openapi": "3.1.0"`) {
			t.Fatalf("OpenAPI: %v", err)
		}
		res, err := c.Sweep(ctx, core.Timestamp{}) // at the server's clock
		if err != nil || !strings.Contains(string(res), `"expired_locks"`) {
			t.Fatalf("Sweep = %s, %v", res, err)
		}
	})
}
