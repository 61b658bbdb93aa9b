package e2e_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

func TestDevServerWithToken(t *testing.T) {
	d := startDev(t, t.TempDir(), "--token", "s3cret")
	defer d.stop(t)
	t.Run("RequestsWithoutTheTokenAreRejected", func(t *testing.T) {
		r := d.cli(t, "execution", "list")
		if r.code != 1 || !strings.Contains(r.stderr, "missing or invalid API token (HTTP 401)") {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("TheTokenFlagIsAccepted", func(t *testing.T) {
		d.mustCLI(t, "execution", "list", "--token", "s3cret")
	})
	t.Run("TheTokenVariableIsAccepted", func(t *testing.T) {
		if r := d.cliEnv(t, []string{"STELA_API_TOKEN=s3cret"}, "execution", "list"); r.code != 0 {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

func TestDevServer(t *testing.T) {
	dataDir := t.TempDir()
	d := startDev(t, dataDir)
	w := newWorker(t, d)
	add := mustFFQN(t, "e2e:app/activity.add")

	var viaCLI, viaHTTP string
	t.Run("SubmitViaCLIPrintsTheIdAndTheExecutionIsPending", func(t *testing.T) {
		viaCLI = strings.TrimSpace(d.mustCLI(t, "execution", "submit", add.String(), "[3, 5]", "--component-type", "activity"))
		if _, err := core.ParseExecutionId(viaCLI); err != nil {
			t.Fatalf("submit printed %q, not an execution id", viaCLI)
		}
		if got := d.mustCLI(t, "execution", "status", viaCLI); !strings.HasPrefix(got, "Pending at ") {
			t.Errorf("status = %q, want Pending at …", got)
		}
	})

	t.Run("SubmitViaHTTPIsIdempotentByIdAndRejectsOtherParams", func(t *testing.T) {
		viaHTTP = "E_01KBNHM5FQW81KP5Y3XMNX31K4"
		body := map[string]any{"ffqn": add.String(), "params": []int{1, 2}}
		if got := d.call(t, http.MethodPut, "/v1/executions/"+viaHTTP, body, nil); got != http.StatusCreated {
			t.Fatalf("first PUT = %d, want 201", got)
		}
		if got := d.call(t, http.MethodPut, "/v1/executions/"+viaHTTP, body, nil); got != http.StatusOK {
			t.Errorf("repeated PUT = %d, want 200", got)
		}
		r := d.cli(t, "execution", "submit", add.String(), "[9, 9]", "--id", viaHTTP, "--component-type", "activity")
		if r.code != 1 || !strings.Contains(r.stderr, "execution already exists with the same id and different parameters (HTTP 409)") {
			t.Errorf("conflicting submit: exit %d, stderr %q", r.code, r.stderr)
		}
	})

	t.Run("MalformedPathEscapeIsAJSON400", func(t *testing.T) {
		// net/http rejects such a request line before any handler runs;
		// the dev server's listener still answers it as JSON.
		c, err := net.Dial("tcp", strings.TrimPrefix(d.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(deadline))
		if _, err := io.WriteString(c, "GET /v1/executions/%zz HTTP/1.1\r\nHost: stela\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		var b map[string]string
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" ||
			json.Unmarshal(body, &b) != nil || !strings.HasPrefix(b["err"], "malformed request") {
			t.Fatalf("status %d, Content-Type %q, body %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	})

	t.Run("WorkerLocksAndFinishesTheActivities", func(t *testing.T) {
		done := map[string]bool{}
		for len(done) < 2 {
			for _, l := range w.lock(t, add, core.ComponentTypeActivity, 10) {
				sum := "8"
				if l.ExecutionID.String() == viaHTTP {
					sum = "3"
				}
				var next wire.NextVersionJSON
				d.call(t, http.MethodPost, "/v1/worker/append", wire.AppendBody{ExecutionID: l.ExecutionID,
					Version: l.NextVersion, Req: finished("u64", sum)}, &next)
				done[l.ExecutionID.String()] = true
			}
		}
		if !done[viaCLI] || !done[viaHTTP] {
			t.Fatalf("locked %v, want %s and %s", done, viaCLI, viaHTTP)
		}
		if got := d.mustCLI(t, "execution", "status", viaCLI); strings.TrimSpace(got) != "Finished: OK" {
			t.Errorf("status = %q, want Finished: OK", got)
		}
		if got := d.mustCLI(t, "execution", "result", viaCLI); !strings.Contains(got, `"ok": 8`) {
			t.Errorf("result = %q, want {\"ok\": 8}", got)
		}
	})

	t.Run("WorkerLogsAreShownByTheCLI", func(t *testing.T) {
		id, err := core.ParseExecutionId(viaCLI)
		if err != nil {
			t.Fatal(err)
		}
		info, msg, stream := "info", "adding 3 and 5", "stdout"
		if got := d.call(t, http.MethodPost, "/v1/worker/logs", wire.AppendLogsBody{Logs: []wire.LogRowJSON{
			{ExecutionID: id, RunID: w.run, CreatedAt: now(), Type: "log", Level: &info, Message: &msg},
			{ExecutionID: id, RunID: w.run, CreatedAt: now(), Type: "stream", StreamType: &stream, Payload: []byte("hello from stdout\n")},
		}}, nil); got != http.StatusNoContent {
			t.Fatalf("POST /v1/worker/logs = %d", got)
		}
		out := d.mustCLI(t, "execution", "logs", viaCLI)
		for _, want := range []string{"[INFO  ] adding 3 and 5", "[STDOUT] hello from stdout"} {
			if !strings.Contains(out, want) {
				t.Errorf("logs lack %q:\n%s", want, out)
			}
		}
		if out := d.mustCLI(t, "execution", "logs", viaCLI, "--json", "--stream-type", "none"); strings.Count(out, "\n") != 1 || !strings.Contains(out, `"level":"info"`) {
			t.Errorf("logs --json --stream-type none:\n%s", out)
		}
	})

	var parent core.ExecutionId
	t.Run("ParentWorkflowWithAChildAndADelayResumesAndFinishes", func(t *testing.T) {
		wf := mustFFQN(t, "e2e:app/workflow.parent")
		child := mustFFQN(t, "e2e:app/activity.child")
		id := strings.TrimSpace(d.mustCLI(t, "execution", "submit", wf.String(), `["go"]`, "--component-type", "workflow"))
		var err error
		if parent, err = core.ParseExecutionId(id); err != nil {
			t.Fatal(err)
		}
		locked := w.lock(t, wf, core.ComponentTypeWorkflow, 1)[0]
		if locked.ExecutionID != parent {
			t.Fatalf("locked %s, want the parent %s", locked.ExecutionID, parent)
		}
		jsChild, _ := core.NewJoinSetId(core.JoinSetKindGenerated, "1")
		jsSleep, _ := core.NewJoinSetId(core.JoinSetKindOneOff, "sleep")
		childID := parent.NextLevel(jsChild)
		delayID := core.NewDelayId(parent, jsSleep, 1)
		t1 := now()
		var next wire.NextVersionJSON
		d.call(t, http.MethodPost, "/v1/worker/append-batch/create-children", wire.CreateChildrenBody{
			AppendBatchBody: wire.AppendBatchBody{ExecutionID: parent, Version: locked.NextVersion, Batch: []core.AppendRequest{
				history(&core.JoinSetCreate{JoinSetID: jsChild}),
				history(&core.JoinSetRequestEvent{JoinSetID: jsChild, Request: &core.ChildExecutionRequest{
					ChildExecutionID: core.ExecutionIdDerived{ExecutionId: childID}, TargetFFQN: child, Params: core.Params{}}}),
				history(&core.JoinSetCreate{JoinSetID: jsSleep}),
				history(&core.JoinSetRequestEvent{JoinSetID: jsSleep, Request: &core.DelayRequest{DelayID: delayID,
					ExpiresAt: t1.Add(time.Second), ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(time.Second)}}}),
				history(&core.JoinNext{JoinSetID: jsChild, RunExpiresAt: t1}),
			}},
			Children: []core.CreateRequest{{CreatedAt: t1, ExecutionID: childID, FFQN: child, Params: core.Params{},
				Parent: &core.Parent{ExecutionID: parent, JoinSetID: jsChild}, ScheduledAt: t1,
				ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity}, Metadata: core.ExecutionMetadata{}}},
		}, &next)
		if got := d.mustCLI(t, "execution", "status", parent.String()); !strings.HasPrefix(got, "Blocked by g:1") {
			t.Errorf("parent status = %q, want Blocked by g:1", got)
		}

		// The parent's own worker runs alongside `stela execution status --follow`.
		var wg sync.WaitGroup
		wg.Go(func() {
			c := w.lock(t, child, core.ComponentTypeActivity, 1)[0]
			if c.Parent == nil || c.Parent.ExecutionID != parent {
				t.Errorf("child's parent = %+v", c.Parent)
				return
			}
			t1 := now()
			d.call(t, http.MethodPost, "/v1/worker/append-batch/respond-to-parent", wire.RespondToParentBody{
				Events: core.AppendEventsToExecution{ExecutionID: c.ExecutionID, Version: c.NextVersion,
					Batch: []core.AppendRequest{finished("string", `"child done"`)}},
				Response: core.AppendResponseToExecution{ParentExecutionID: parent, CreatedAt: t1, JoinSetID: jsChild,
					ChildExecutionID: core.ExecutionIdDerived{ExecutionId: c.ExecutionID}, FinishedVersion: c.NextVersion,
					Result: finished("string", `"child done"`).Event.(*core.Finished).Retval},
			}, &next)
			// Resumed by the child's response: await the delay.
			p := w.lock(t, wf, core.ComponentTypeWorkflow, 1)[0]
			d.call(t, http.MethodPost, "/v1/worker/append", wire.AppendBody{ExecutionID: parent, Version: p.NextVersion,
				Req: history(&core.JoinNext{JoinSetID: jsSleep, RunExpiresAt: now()})}, &next)
			// Resumed by the delay, fired by the server's timers.
			p = w.lock(t, wf, core.ComponentTypeWorkflow, 1)[0]
			if len(p.Responses) != 2 {
				t.Errorf("parent resumed with %d responses, want 2", len(p.Responses))
			}
			d.call(t, http.MethodPost, "/v1/worker/append", wire.AppendBody{ExecutionID: parent, Version: p.NextVersion,
				Req: finished("string", `"parent done"`)}, &next)
		})
		out := d.mustCLI(t, "execution", "status", parent.String(), "--follow")
		wg.Wait()
		if !strings.Contains(out, "Finished: OK") || !strings.Contains(out, `Result: {"ok":"parent done"}`) {
			t.Errorf("status --follow printed:\n%s", out)
		}
		resp := d.mustCLI(t, "execution", "responses", parent.String(), "--json")
		for _, want := range []string{`"child_execution_finished"`, `"delay_finished"`, delayID.String()} {
			if !strings.Contains(resp, want) {
				t.Errorf("responses lack %s:\n%s", want, resp)
			}
		}
		events := d.mustCLI(t, "execution", "events", parent.String(), "--from", "0", "--limit", "50")
		for _, want := range []string{"delay_request", "child_execution_request", "finished"} {
			if !strings.Contains(events, want) {
				t.Errorf("events lack %s:\n%s", want, events)
			}
		}
		if got := d.mustCLI(t, "execution", "status", childID.String()); strings.TrimSpace(got) != "Finished: OK" {
			t.Errorf("child status = %q", got)
		}
		if got := d.mustCLI(t, "execution", "list", "--show-derived"); !strings.Contains(got, childID.String()) {
			t.Errorf("list --show-derived lacks the child:\n%s", got)
		}
	})

	t.Run("PauseAndUnpause", func(t *testing.T) {
		id := strings.TrimSpace(d.mustCLI(t, "execution", "submit", add.String(), "[1, 1]", "--component-type", "activity"))
		if got := d.mustCLI(t, "execution", "pause", id); strings.TrimSpace(got) != "paused" {
			t.Errorf("pause printed %q", got)
		}
		if got := d.mustCLI(t, "execution", "status", id); strings.TrimSpace(got) != "Paused" {
			t.Errorf("status = %q, want Paused", got)
		}
		r := d.cli(t, "execution", "pause", id)
		if r.code != 1 || !strings.Contains(r.stderr, "cannot pause, execution is already paused (HTTP 422)") {
			t.Errorf("second pause: exit %d, stderr %q", r.code, r.stderr)
		}
		if got := d.mustCLI(t, "execution", "unpause", id); strings.TrimSpace(got) != "unpaused" {
			t.Errorf("unpause printed %q", got)
		}
		if got := d.mustCLI(t, "execution", "status", id); !strings.HasPrefix(got, "Pending at ") {
			t.Errorf("status = %q, want Pending at …", got)
		}
	})

	t.Run("CancelledActivityIsFinishedByTheTimers", func(t *testing.T) {
		id := strings.TrimSpace(d.mustCLI(t, "execution", "submit", "e2e:app/activity.slow", "[]", "--component-type", "activity"))
		if got := d.mustCLI(t, "execution", "cancel", id); strings.TrimSpace(got) != "cancellation requested" {
			t.Errorf("cancel printed %q", got)
		}
		out := d.mustCLI(t, "execution", "status", id, "--follow", "--interval", "200ms")
		if !strings.Contains(out, "Finished: Execution failure (Cancelled)") {
			t.Errorf("status --follow printed:\n%s", out)
		}
	})

	t.Run("DelayCanBePausedAndCancelled", func(t *testing.T) {
		wf := mustFFQN(t, "e2e:app/workflow.sleeper")
		id, err := core.ParseExecutionId(strings.TrimSpace(d.mustCLI(t, "execution", "submit", wf.String(), "--component-type", "workflow")))
		if err != nil {
			t.Fatal(err)
		}
		l := w.lock(t, wf, core.ComponentTypeWorkflow, 1)[0]
		js, _ := core.NewJoinSetId(core.JoinSetKindOneOff, "nap")
		delay := core.NewDelayId(id, js, 1)
		var next wire.NextVersionJSON
		d.call(t, http.MethodPost, "/v1/worker/append-batch", wire.AppendBatchBody{ExecutionID: id, Version: l.NextVersion,
			Batch: []core.AppendRequest{
				history(&core.JoinSetCreate{JoinSetID: js}),
				history(&core.JoinSetRequestEvent{JoinSetID: js, Request: &core.DelayRequest{DelayID: delay,
					ExpiresAt: now().Add(time.Hour), ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(time.Hour)}}}),
				history(&core.JoinNext{JoinSetID: js, RunExpiresAt: now()}),
			}}, &next)
		if got := d.mustCLI(t, "delay", "pause", delay.String()); strings.TrimSpace(got) != "paused" {
			t.Errorf("delay pause printed %q", got)
		}
		if got := d.mustCLI(t, "delay", "unpause", delay.String()); strings.TrimSpace(got) != "unpaused" {
			t.Errorf("delay unpause printed %q", got)
		}
		if got := d.mustCLI(t, "delay", "cancel", delay.String()); strings.TrimSpace(got) != "cancelled" {
			t.Errorf("delay cancel printed %q", got)
		}
		if got := d.mustCLI(t, "execution", "status", id.String()); !strings.HasPrefix(got, "Pending at ") {
			t.Errorf("owner after the cancelled delay = %q, want Pending at …", got)
		}
		r := d.cli(t, "delay", "pause", delay.String())
		if r.code != 1 || !strings.Contains(r.stderr, "(HTTP 404)") {
			t.Errorf("pausing a cancelled delay: exit %d, stderr %q", r.code, r.stderr)
		}
	})

	t.Run("StatusFollowJSONPrintsOneLinePerChange", func(t *testing.T) {
		out := d.mustCLI(t, "execution", "status", viaHTTP, "--follow", "--json")
		if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(lines[0], `"status":"finished"`) {
			t.Errorf("status --follow --json of a finished execution:\n%s", out)
		}
	})

	t.Run("ErrorsPrintTheServerMessageAndExitNonZero", func(t *testing.T) {
		r := d.cli(t, "execution", "status", "E_01KBNJ2T3D8W7H3X6Q4M9R5V1A")
		if r.code != 1 || !strings.Contains(r.stderr, "not found (HTTP 404)") {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})

	t.Run("DataSurvivesARestartOnTheSameDataDir", func(t *testing.T) {
		d.stop(t)
		d2 := startDev(t, dataDir)
		defer d2.stop(t)
		list := d2.mustCLI(t, "execution", "list", "--show-derived", "--json", "--limit", "100")
		for _, id := range []string{viaCLI, viaHTTP, parent.String()} {
			if !strings.Contains(list, id) {
				t.Errorf("after restart the list lacks %s", id)
			}
		}
		if got := d2.mustCLI(t, "execution", "result", parent.String()); !strings.Contains(got, `"ok": "parent done"`) {
			t.Errorf("parent result after restart = %q", got)
		}
		if got := d2.mustCLI(t, "execution", "status", viaHTTP); strings.TrimSpace(got) != "Finished: OK" {
			t.Errorf("status after restart = %q", got)
		}
	})
}
