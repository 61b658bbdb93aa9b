package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/examples/demo"
	"github.com/stela-dev/stela/wire"
	sdk "github.com/stela-dev/stela/worker"
)

// xssMarkup is user data that would run script if it were ever inserted as HTML.
const (
	xssImg    = `<img src=x onerror="window.__xss=1">`
	xssScript = `<script>window.__xss=2</script>`
)

// consoleSeed is what the console tests look at, created by a worker over
// the /v1/worker routes of a `stela dev` server.
type consoleSeed struct {
	parent, child, failed, paused, running, sleeper, stub, xss core.ExecutionId
	delay                                                      core.DelayId
	parentF, childF, runningF                                  core.FunctionFqn
	runningNext                                                core.Version // the version the running one's worker appends at
}

func seedConsole(t *testing.T, d *devServer) consoleSeed {
	t.Helper()
	w := newWorker(t, d)
	var s consoleSeed
	var next wire.NextVersionJSON
	submit := func(ffqn core.FunctionFqn, ct core.ComponentType, params string) core.ExecutionId {
		t.Helper()
		var ok struct {
			Ok string `json:"ok"`
		}
		d.call(t, http.MethodPost, "/v1/executions", map[string]any{"ffqn": ffqn.String(), "params": json.RawMessage(params), "component_type": string(ct)}, &ok)
		id, err := core.ParseExecutionId(ok.Ok)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	lockOne := func(ffqn core.FunctionFqn, ct core.ComponentType, want core.ExecutionId) wire.LockedExecutionJSON {
		t.Helper()
		l := w.lock(t, ffqn, ct, 1)[0]
		if l.ExecutionID != want {
			t.Fatalf("locked %s, want %s", l.ExecutionID, want)
		}
		return l
	}
	logLine := func(id core.ExecutionId, msg string) {
		t.Helper()
		info := "info"
		if got := d.call(t, http.MethodPost, "/v1/worker/logs", wire.AppendLogsBody{Logs: []wire.LogRowJSON{
			{ExecutionID: id, RunID: w.run, CreatedAt: now(), Type: "log", Level: &info, Message: &msg},
		}}, nil); got != http.StatusNoContent {
			t.Fatalf("POST /v1/worker/logs = %d", got)
		}
	}

	// A finished workflow with a child activity and a delay the server's timers fire.
	s.parentF = mustFFQN(t, "e2e:console/workflow.parent")
	s.childF = mustFFQN(t, "e2e:console/activity.child")
	s.parent = submit(s.parentF, core.ComponentTypeWorkflow, `["go"]`)
	l := lockOne(s.parentF, core.ComponentTypeWorkflow, s.parent)
	jsChild, _ := core.NewJoinSetId(core.JoinSetKindGenerated, "1")
	jsSleep, _ := core.NewJoinSetId(core.JoinSetKindOneOff, "nap")
	s.child = s.parent.NextLevel(jsChild)
	nap := core.NewDelayId(s.parent, jsSleep, 1)
	t1 := now()
	d.call(t, http.MethodPost, "/v1/worker/append-batch/create-children", wire.CreateChildrenBody{
		AppendBatchBody: wire.AppendBatchBody{ExecutionID: s.parent, Version: l.NextVersion, Batch: []core.AppendRequest{
			history(&core.JoinSetCreate{JoinSetID: jsChild}),
			history(&core.JoinSetRequestEvent{JoinSetID: jsChild, Request: &core.ChildExecutionRequest{
				ChildExecutionID: core.ExecutionIdDerived{ExecutionId: s.child}, TargetFFQN: s.childF, Params: core.Params{}}}),
			history(&core.JoinSetCreate{JoinSetID: jsSleep}),
			history(&core.JoinSetRequestEvent{JoinSetID: jsSleep, Request: &core.DelayRequest{DelayID: nap,
				ExpiresAt: t1.Add(500 * time.Millisecond), ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(500 * time.Millisecond)}}}),
			history(&core.JoinNext{JoinSetID: jsChild, RunExpiresAt: t1}),
		}},
		Children: []core.CreateRequest{{CreatedAt: t1, ExecutionID: s.child, FFQN: s.childF, Params: core.Params{},
			Parent: &core.Parent{ExecutionID: s.parent, JoinSetID: jsChild}, ScheduledAt: t1,
			ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity}, Metadata: core.ExecutionMetadata{}}},
	}, &next)
	logLine(s.parent, "started the child and a nap")
	c := lockOne(s.childF, core.ComponentTypeActivity, s.child)
	d.call(t, http.MethodPost, "/v1/worker/append-batch/respond-to-parent", wire.RespondToParentBody{
		Events: core.AppendEventsToExecution{ExecutionID: s.child, Version: c.NextVersion, Batch: []core.AppendRequest{finished("string", `"child done"`)}},
		Response: core.AppendResponseToExecution{ParentExecutionID: s.parent, CreatedAt: now(), JoinSetID: jsChild,
			ChildExecutionID: core.ExecutionIdDerived{ExecutionId: s.child}, FinishedVersion: c.NextVersion,
			Result: finished("string", `"child done"`).Event.(*core.Finished).Retval},
	}, &next)
	p := lockOne(s.parentF, core.ComponentTypeWorkflow, s.parent)
	d.call(t, http.MethodPost, "/v1/worker/append", wire.AppendBody{ExecutionID: s.parent, Version: p.NextVersion,
		Req: history(&core.JoinNext{JoinSetID: jsSleep, RunExpiresAt: now()})}, &next)
	p = lockOne(s.parentF, core.ComponentTypeWorkflow, s.parent) // resumed once the timers fired the nap
	d.call(t, http.MethodPost, "/v1/worker/append", wire.AppendBody{ExecutionID: s.parent, Version: p.NextVersion,
		Req: finished("string", `"parent done"`)}, &next)
	var inserted wire.InsertedJSON
	line := uint32(12)
	file, fn := "src/workflow.rs", "parent"
	d.call(t, http.MethodPost, "/v1/worker/backtraces", wire.AppendBacktracesBody{Backtraces: []core.BacktraceInfo{{
		ExecutionID: s.parent, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeWorkflow},
		VersionMinIncluding: 2, VersionMaxExcluding: 7,
		WasmBacktrace: core.WasmBacktrace{Frames: []core.FrameInfo{{Module: "workflow.wasm", FuncName: "parent",
			Symbols: []core.FrameSymbol{{FuncName: &fn, File: &file, Line: &line}}}}},
	}}}, &inserted)

	// A failed activity whose error value is markup.
	failF := mustFFQN(t, "e2e:console/activity.fail")
	s.failed = submit(failF, core.ComponentTypeActivity, `[]`)
	l = lockOne(failF, core.ComponentTypeActivity, s.failed)
	errVal, _ := json.Marshal(xssScript)
	d.call(t, http.MethodPost, "/v1/worker/append", wire.AppendBody{ExecutionID: s.failed, Version: l.NextVersion,
		Req: core.AppendRequest{CreatedAt: now(), Event: &core.Finished{Retval: core.RetErr(&core.WastValWithType{Type: "string", Value: errVal})}}}, &next)

	// A paused one.
	s.paused = submit(mustFFQN(t, "e2e:console/activity.later"), core.ComponentTypeActivity, `[1]`)
	d.call(t, http.MethodPut, "/v1/executions/"+s.paused.String()+"/pause", nil, nil)

	// A running (locked) one with a log line that is markup.
	s.runningF = mustFFQN(t, "e2e:console/activity.slow")
	s.running = submit(s.runningF, core.ComponentTypeActivity, `[]`)
	s.runningNext = lockOne(s.runningF, core.ComponentTypeActivity, s.running).NextVersion
	logLine(s.running, "working on it "+xssImg)

	// A workflow sleeping on a one-hour delay, with a stub child no worker runs.
	sleeperF := mustFFQN(t, "e2e:console/workflow.sleeper")
	stubF := mustFFQN(t, "e2e:console/stub.answer")
	s.sleeper = submit(sleeperF, core.ComponentTypeWorkflow, `[]`)
	l = lockOne(sleeperF, core.ComponentTypeWorkflow, s.sleeper)
	jsLong, _ := core.NewJoinSetId(core.JoinSetKindOneOff, "long")
	jsStub, _ := core.NewJoinSetId(core.JoinSetKindGenerated, "1")
	s.delay = core.NewDelayId(s.sleeper, jsLong, 1)
	s.stub = s.sleeper.NextLevel(jsStub)
	t1 = now()
	d.call(t, http.MethodPost, "/v1/worker/append-batch/create-children", wire.CreateChildrenBody{
		AppendBatchBody: wire.AppendBatchBody{ExecutionID: s.sleeper, Version: l.NextVersion, Batch: []core.AppendRequest{
			history(&core.JoinSetCreate{JoinSetID: jsStub}),
			history(&core.JoinSetRequestEvent{JoinSetID: jsStub, Request: &core.ChildExecutionRequest{
				ChildExecutionID: core.ExecutionIdDerived{ExecutionId: s.stub}, TargetFFQN: stubF, Params: core.Params{}}}),
			history(&core.JoinSetCreate{JoinSetID: jsLong}),
			history(&core.JoinSetRequestEvent{JoinSetID: jsLong, Request: &core.DelayRequest{DelayID: s.delay,
				ExpiresAt: t1.Add(time.Hour), ScheduleAt: core.ScheduleAt{Kind: "in", In: core.DurationOf(time.Hour)}}}),
			history(&core.JoinNext{JoinSetID: jsLong, RunExpiresAt: t1}),
		}},
		Children: []core.CreateRequest{{CreatedAt: t1, ExecutionID: s.stub, FFQN: stubF, Params: core.Params{},
			Parent: &core.Parent{ExecutionID: s.sleeper, JoinSetID: jsStub}, ScheduledAt: t1,
			ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivityStub}, Metadata: core.ExecutionMetadata{}}},
	}, &next)

	// A pending one whose ffqn and params are markup.
	s.xss = submit(mustFFQN(t, `e2e:xss/`+xssImg+`.run`), core.ComponentTypeActivity, `[`+string(errVal)+`, {"k": "`+strings.ReplaceAll(xssImg, `"`, `\"`)+`"}]`)
	return s
}

func TestConsoleInTheBrowser(t *testing.T) {
	chromiumPath(t) // skip early, before starting a server, when there is no browser
	d := startDev(t, t.TempDir())
	defer d.stop(t)
	s := seedConsole(t, d)
	b := newTab(t, d.url)
	shots := screenshotDir(t)
	top := []string{s.parent.String(), s.failed.String(), s.paused.String(), s.running.String(), s.sleeper.String(), s.xss.String()}

	t.Run("ListShowsTheExecutionsAndTheirCountsByState", func(t *testing.T) {
		b.t = t
		b.open("/")
		b.waitRows("the six top-level executions", top...)
		for bucket, n := range map[string]int{"locked": 1, "pending": 1, "blocked": 1, "paused": 1, "finished_ok": 1,
			"finished_error": 1, "scheduled": 0, "cancelling": 0, "finished_execution_failure": 0} {
			b.waitFor(bucket+" count", `document.querySelector('.count[data-bucket="`+bucket+`"]')`)
			if got := b.num(`Number(document.querySelector('.count[data-bucket="` + bucket + `"]').dataset.count)`); got != n {
				t.Errorf("%s count = %d, want %d", bucket, got, n)
			}
		}
		if got := b.str(`location.pathname`); got != "/console/" {
			t.Errorf("GET / landed on %s, want /console/", got)
		}
		b.screenshot(shots, "executions.png")
		b.noErrors()
	})

	t.Run("FiltersNarrowTheListAndLiveInTheURL", func(t *testing.T) {
		b.t = t
		b.open("/console/")
		b.waitRows("the list", top...)
		b.setValue("#f-ffqn", "e2e:console/activity")
		b.click(".filters button[type=submit]")
		b.waitRows("activities only", s.failed.String(), s.paused.String(), s.running.String())
		if q := b.str(`location.search`); !strings.Contains(q, "ffqn=e2e%3Aconsole%2Factivity") {
			t.Errorf("filter not in the URL: %q", q)
		}
		b.click(`.count[data-bucket="paused"]`) // a count is a state filter
		b.waitRows("paused activities", s.paused.String())
		b.open("/console/?state=locked") // a deep link with a filter
		b.waitRows("locked ones", s.running.String())
		if got := b.str(`document.querySelector('#f-state').value`); got != "locked" {
			t.Errorf("state select = %q after a deep link", got)
		}
		b.open("/console/?derived=1&id=" + s.parent.String())
		b.waitRows("the parent and its child", s.parent.String(), s.child.String())
		b.noErrors()
	})

	t.Run("DeepLinkShowsTheTimelineAndTheTreeWalksDownAndUp", func(t *testing.T) {
		b.t = t
		b.open(execPath(s.parent))
		b.waitFor("the events", `document.querySelectorAll('#events tbody tr').length >= 9`)
		var kinds []string
		b.eval(`[...document.querySelectorAll('#events tbody tr')].map((r) => r.dataset.kind)`, &kinds)
		all := strings.Join(kinds, " ")
		for _, want := range []string{"created", "locked", "join_set_create", "join_set_request:child_execution_request",
			"join_set_request:delay_request", "join_next", "finished"} {
			if !strings.Contains(all, want) {
				t.Errorf("timeline lacks %s: %v", want, kinds)
			}
		}
		for _, seg := range []string{"seg-running", "seg-wait", "seg-sleep", "seg-child"} {
			if b.num(`document.querySelectorAll('.gantt .`+seg+`:not(.key)').length`) == 0 {
				t.Errorf("time strip has no %s segment", seg)
			}
		}
		if got := b.str(`document.querySelector('h1').textContent`); got != s.parentF.String() {
			t.Errorf("h1 = %q", got)
		}
		if !b.bodyContains(`"parent done"`) || !b.bodyContains("fired") {
			t.Errorf("result or fired delay missing:\n%s", b.bodyText())
		}
		// Response times to the millisecond, in the join sets as in the responses table.
		for _, sel := range []string{`tr.child time`, `tr.delay td:nth-child(5) time`, `#responses tbody time`} {
			if got := b.str(`document.querySelector(` + jsString(sel) + `).textContent`); !msTime.MatchString(got) {
				t.Errorf("%s shows %q, want a time to the millisecond", sel, got)
			}
		}
		// Payload on demand.
		b.click(`#events tr[data-kind="finished"] details summary`)
		b.waitFor("the payload", `document.querySelector('#events tr[data-kind="finished"] details pre')`)
		// A backtrace (its source is not mapped: the API's 404 is shown).
		b.click(`#events tr[data-version="2"] button`)
		b.waitFor("the frames", `document.querySelector('#backtrace ol.frames li')`)
		b.click(`#backtrace .symbol button`)
		b.waitFor("the source error", `document.querySelector('#backtrace .error')`)
		if msg := b.str(`document.querySelector('#backtrace .error').textContent`); !strings.Contains(msg, "source file not found") {
			t.Errorf("source error = %q", msg)
		}
		b.screenshot(shots, "execution.png")

		// Down to the child, then up through the breadcrumb, without reloading.
		b.eval(`window.__marker = 'same document'`, nil)
		b.click(`tr.child a[href="` + execPath(s.child) + `"]`)
		b.waitFor("the child's page", `document.querySelector('h1').textContent === `+jsString(s.childF.String()))
		if got := b.str(`location.pathname`); got != execPath(s.child) {
			t.Errorf("child URL = %s", got)
		}
		b.waitFor("the child's result", `document.querySelector('.result-ok')`)
		b.click(`.crumbs a[href="` + execPath(s.parent) + `"]`)
		b.waitFor("the parent's page", `document.querySelector('h1').textContent === `+jsString(s.parentF.String()))
		if got := b.str(`window.__marker || ''`); got != "same document" {
			t.Errorf("walking the tree reloaded the page")
		}
		b.noErrors()
	})

	t.Run("FollowsARunningExecutionUntilItFinishes", func(t *testing.T) {
		b.t = t
		b.open(execPath(s.running))
		b.waitFor("the locked state", `document.querySelector('.title-row .state-locked')`)
		b.waitFor("the live indicator", `!document.querySelector('.live').hidden`)
		b.waitFor("the log line", `[...document.querySelectorAll('#logs pre')].some((p) => p.textContent.includes('working on it'))`)
		b.eval(`window.__marker = 'still here'`, nil)
		// The worker finishes it while the page is open.
		var next wire.NextVersionJSON
		d.call(t, http.MethodPost, "/v1/worker/append", wire.AppendBody{ExecutionID: s.running, Version: s.runningNext,
			Req: finished("string", `"slow but done"`)}, &next)
		b.waitFor("the finished state", `document.querySelector('.title-row .state-finished_ok')`)
		b.waitFor("the result", `document.querySelector('.result-ok') && document.querySelector('.result-ok').textContent.includes('slow but done')`)
		b.waitFor("the live indicator to stop", `document.querySelector('.live').hidden`)
		if got := b.str(`window.__marker || ''`); got != "still here" {
			t.Errorf("the page reloaded while following")
		}
		b.noErrors()
	})

	t.Run("ActionsConfirmAndShowTheAPIsErrors", func(t *testing.T) {
		b.t = t
		b.open(execPath(s.paused))
		b.waitFor("the paused state", `document.querySelector('.title-row .state-paused')`)
		b.click("#act-unpause")
		b.confirmDialog()
		b.waitFor("the pending state", `document.querySelector('.title-row .state-pending')`)
		b.click("#act-pause")
		b.eval(`document.querySelector('dialog[open] button[value=""]').click()`, nil) // cancelled: nothing happens
		b.waitFor("no dialog", `!document.querySelector('dialog[open]')`)
		if b.num(`document.querySelectorAll('.title-row .state-pending').length`) != 1 {
			t.Errorf("cancelling the dialog changed the state")
		}
		b.click("#act-pause")
		b.confirmDialog()
		b.waitFor("the paused state again", `document.querySelector('.title-row .state-paused')`)

		// A finished execution offers no pause and no cancel, and says why.
		b.open(execPath(s.parent))
		b.waitFor("the actions", `document.querySelector('#act-pause') && document.querySelector('#act-cancel')`)
		for _, sel := range []string{"#act-pause", "#act-cancel"} {
			if !b.bool(`document.querySelector('` + sel + `').disabled`) {
				t.Errorf("%s is enabled on a finished execution", sel)
			}
		}
		if note := b.str(`document.querySelector('#actions-note').textContent`); !strings.Contains(note, "Finished") {
			t.Errorf("actions note = %q, want it to say the execution finished", note)
		}
		b.click("#act-pause") // a disabled button does nothing
		if n := b.num(`document.querySelectorAll('dialog[open]').length`); n != 0 {
			t.Errorf("a disabled Pause opened a dialog")
		}
		// A running activity cannot be paused, a workflow that is not -cancellable cannot be cancelled.
		b.open(execPath(s.sleeper))
		b.waitFor("the actions", `document.querySelector('#act-pause') && document.querySelector('#act-cancel')`)
		if b.bool(`document.querySelector('#act-pause').disabled`) || !b.bool(`document.querySelector('#act-cancel').disabled`) {
			t.Errorf("sleeping workflow: pause disabled=%v cancel disabled=%v; want pause enabled, cancel disabled",
				b.bool(`document.querySelector('#act-pause').disabled`), b.bool(`document.querySelector('#act-cancel').disabled`))
		}
		if note := b.str(`document.querySelector('#actions-note').textContent`); !strings.Contains(note, "-cancellable") {
			t.Errorf("actions note = %q, want the reason cancel does not apply", note)
		}

		// Cancel a pending delay from the join set table.
		b.open(execPath(s.sleeper))
		b.waitFor("the delay row", `document.querySelector('tr.delay .time-left')`)
		if left := b.str(`document.querySelector('tr.delay .time-left').textContent`); !strings.Contains(left, "left") {
			t.Errorf("time left = %q", left)
		}
		b.screenshot(shots, "execution-delay.png")
		b.click(`tr.delay button[data-delay-action="cancel"]`)
		b.confirmDialog()
		b.waitFor("the cancelled delay", `document.querySelector('tr.delay') && document.querySelector('tr.delay').textContent.includes('cancelled')`)
		b.waitFor("the sleeper pending again", `document.querySelector('.title-row .state-pending')`)

		// A stub value the API refuses: its own message and status are shown.
		b.click(`tr.child[data-child="` + s.stub.String() + `"] button[data-action="stub"]`)
		b.waitFor("the stub dialog", `document.querySelector('dialog[open] #stub-value')`)
		b.setValue("#stub-value", `{"neither": "ok nor err"}`)
		b.confirmDialog()
		b.waitFor("the error", `document.querySelector('.action-error .error')`)
		if msg := b.str(`document.querySelector('.action-error .error').textContent`); !strings.Contains(msg, "Stub failed") || !strings.Contains(msg, "(HTTP 4") {
			t.Errorf("error shown = %q, want the API's 4xx", msg)
		}

		// Stub the activity_stub child from its row: it finishes with the value given.
		b.click(`tr.child[data-child="` + s.stub.String() + `"] button[data-action="stub"]`)
		b.waitFor("the stub dialog", `document.querySelector('dialog[open] #stub-value')`)
		b.setValue("#stub-value", `{"ok": {"type": "string", "value": "stubbed"}}`)
		b.confirmDialog()
		b.waitFor("the stub's response", `document.querySelector('tr.child[data-child="`+s.stub.String()+`"]').textContent.includes('stubbed')`)
		b.open(execPath(s.stub))
		b.waitFor("the stubbed child finished", `document.querySelector('.title-row .state-finished_ok')`)
		if b.num(`document.querySelectorAll('#act-stub').length`) != 0 {
			t.Errorf("a finished stub still offers Stub…")
		}
		b.noErrors()
	})

	t.Run("SubmitAndCancelFromThePage", func(t *testing.T) {
		b.t = t
		b.open("/console/submit")
		b.setValue("#s-ffqn", "e2e:console/activity.submitted")
		b.setValue("#s-params", `[1, "two"]`)
		// Every field's label is in the first column, beside its field (an error line once took a cell).
		var lefts []int
		b.eval(`[...document.querySelectorAll('.submit-form > label:not(.check)')].map((l) => Math.round(l.getBoundingClientRect().left))`, &lefts)
		for _, l := range lefts {
			if len(lefts) != 4 || l != lefts[0] {
				t.Errorf("submit form labels at x = %v, want 4 in one column", lefts)
				break
			}
		}
		// Without a deployment the type must be chosen: the server would store an activity.
		b.waitFor("the deployment check", `document.querySelector('#s-type').dataset.managed === 'false'`)
		b.click("#s-submit")
		b.waitFor("the type error", `document.querySelector('#s-type + .error-line').textContent.includes('Choose the component type')`)
		if n := b.num(`document.querySelectorAll('dialog[open]').length`); n != 0 {
			t.Errorf("submitted without a component type")
		}
		b.setValue("#s-type", "activity")
		b.click("#s-submit")
		b.confirmDialog()
		b.waitFor("the new execution's page", `location.pathname.startsWith('/console/executions/E_') && document.querySelector('h1').textContent === 'e2e:console/activity.submitted'`)
		id, err := core.ParseExecutionId(strings.TrimPrefix(b.str(`location.pathname`), "/console/executions/"))
		if err != nil {
			t.Fatal(err)
		}
		b.waitFor("the params", `document.querySelector('section[aria-labelledby="h-params"] pre').textContent.includes('"two"')`)
		b.click("#act-cancel")
		b.confirmDialog()
		b.waitFor("the cancelling state", `document.querySelector('.title-row .state-cancelling, .title-row .state-finished_execution_failure')`)
		var st core.ExecutionWithState
		d.call(t, http.MethodGet, "/v1/executions/"+id.String()+"/status", nil, &st)
		if got := st.PendingState.Status(); got != "cancelling" && got != "finished" {
			t.Errorf("status after cancel = %s", got)
		}
		// Bad params are refused before anything is sent.
		b.open("/console/submit")
		b.setValue("#s-ffqn", "e2e:console/activity.submitted")
		b.setValue("#s-params", `{"not": "an array"}`)
		b.click("#s-submit")
		b.waitFor("the params error", `document.querySelector('.error-line').textContent.includes('JSON array')`)
		b.noErrors()
	})

	t.Run("UserDataIsTextNeverMarkup", func(t *testing.T) {
		b.t = t
		for _, path := range []string{"/console/", execPath(s.xss), execPath(s.failed), execPath(s.running)} {
			b.open(path)
			b.waitFor("the page", `document.querySelector('table')`)
			if path == execPath(s.running) {
				b.waitFor("the log line", `document.querySelector('#logs pre')`)
			}
			if got := b.str(`String(window.__xss === undefined ? '' : window.__xss)`); got != "" {
				t.Errorf("%s: injected script ran (window.__xss = %s)", path, got)
			}
			if n := b.num(`document.querySelectorAll('main img, main script').length`); n != 0 {
				t.Errorf("%s: %d img/script elements made from user data", path, n)
			}
			b.noErrors()
		}
		b.open(execPath(s.xss))
		b.waitFor("the ffqn shown as text", `document.querySelector('h1').textContent.includes('<img src=x')`)
		b.waitFor("the params shown as text", `document.querySelector('section[aria-labelledby="h-params"] pre').textContent.includes('<script>')`)
		b.open(execPath(s.running))
		b.waitFor("the log shown as text", `[...document.querySelectorAll('#logs pre')].some((p) => p.textContent.includes('onerror='))`)
	})

	t.Run("DeploymentsPageExplainsAnEmptyStore", func(t *testing.T) {
		b.t = t
		b.open("/console/deployments")
		b.waitFor("the empty state", `document.querySelector('main .empty')`)
		b.noErrors()
	})
}

// msTime is a console time shown to the millisecond (local time).
var msTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$`)

func (b *tab) bool(expr string) bool {
	b.t.Helper()
	var v bool
	b.eval(`!!(`+expr+`)`, &v)
	return v
}

// TestConsoleRetriesAndAFanOut runs real SDK work against `stela dev` and
// looks at it: an activity that failed twice before it succeeded (its locks
// and failures carry their attempt numbers), and the 100-child fan-out
// example, whose page was 12,000 px of tables before they were folded.
func TestConsoleRetriesAndAFanOut(t *testing.T) {
	chromiumPath(t)
	d := startDev(t, t.TempDir())
	defer d.stop(t)
	conn, err := client.New(d.url)
	if err != nil {
		t.Fatal(err)
	}
	w := sdk.New(conn, sdk.Options{PollWait: 200 * time.Millisecond})
	demo.RegisterFanOut(w)
	flaky := "e2e:console/activity.flaky"
	var runs atomic.Int32
	sdk.Activity(w, flaky, func(context.Context, string) (string, error) {
		if runs.Add(1) <= 2 {
			return "", errors.New("not yet")
		}
		return "third time lucky", nil
	}, sdk.RetryPolicy(3, 10*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	defer runWorker(ctx, t, w)()
	retried, err := w.Submit(ctx, flaky, "x")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := sdk.Await[string](ctx, w, retried); err != nil || got != "third time lucky" {
		t.Fatalf("flaky activity: %q, %v", got, err)
	}
	fan, err := w.Submit(ctx, demo.SumOfSquaresFFQN, int64(100))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := sdk.Await[int64](ctx, w, fan); err != nil || got != 338350 {
		t.Fatalf("fan-out: %d, %v", got, err)
	}
	b := newTab(t, d.url)
	shots := screenshotDir(t)

	t.Run("RetriesShowTheirAttempt", func(t *testing.T) {
		b.t = t
		b.open(execPath(retried))
		b.waitFor("the events", `document.querySelector('#events tr[data-kind="finished"]')`)
		var got []string
		b.eval(`[...document.querySelectorAll('#events tbody tr')].map((r) => r.dataset.kind + ': ' + (r.querySelector('.attempt') ? r.querySelector('.attempt').textContent : ''))`, &got)
		want := []string{"created: ", "locked: attempt 1", "temporarily_failed: attempt 1 failed, retry 1 of 3",
			"locked: attempt 2", "temporarily_failed: attempt 2 failed, retry 2 of 3", "locked: attempt 3", "finished: "}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("events and attempts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		var strip []string
		b.eval(`[...document.querySelectorAll('.gantt .seg[data-attempt]')].map((s) => s.className.split(' ')[1] + ' ' + s.dataset.attempt + ' ' + s.textContent)`, &strip)
		if want := "seg-running 1 #1,seg-retry 1 retry 1,seg-running 2 #2,seg-retry 2 retry 2,seg-running 3 #3"; strings.Join(strip, ",") != want {
			t.Errorf("time strip attempts = %q, want %q", strings.Join(strip, ","), want)
		}
		b.screenshot(shots, "execution-retries.png")
		b.noErrors()
	})

	t.Run("AHundredChildFanOutKeepsItsTablesShort", func(t *testing.T) {
		b.t = t
		b.open(execPath(fan))
		b.waitFor("the events", `document.querySelector('#events tr[data-kind="finished"]') && document.querySelector('#responses')`)
		visible := func(sel string) int {
			return b.num(`[...document.querySelectorAll(` + jsString(sel) + `)].filter((r) => !r.hidden && !r.classList.contains('fold')).length`)
		}
		all := b.num(`document.querySelectorAll('#events tbody tr:not(.fold)').length`)
		if all < 200 {
			t.Fatalf("only %d events: not the 100-child fan-out", all)
		}
		for _, tc := range []struct {
			what, rows  string
			max, hidden int
		}{
			{"events", "#events tbody tr", 20, all - 20},
			{"children", ".joinset tbody tr", 15, 85},
			{"responses", "#responses tbody tr", 20, 80},
		} {
			if got := visible(tc.rows); got != tc.max {
				t.Errorf("%s: %d rows shown, want %d", tc.what, got, tc.max)
			}
			fold := strings.Replace(tc.rows, " tr", " tr.fold", 1)
			if got := b.str(`(document.querySelector(` + jsString(fold) + `) || {}).textContent || ''`); !strings.Contains(got, fmt.Sprintf("Show %d more %s", tc.hidden, tc.what)) {
				t.Errorf("%s: fold row %q, want it to offer the %d hidden", tc.what, got, tc.hidden)
			}
		}
		if h := b.num(`document.documentElement.scrollHeight`); h > 5000 {
			t.Errorf("the page is %d px high, want at most 5000", h)
		}
		b.screenshot(shots, "execution-fanout.png")
		// Unfolded on demand, folded again; the choice survives a live re-render.
		b.click("#events tr.fold button")
		if got := visible("#events tbody tr"); got != all {
			t.Errorf("unfolded events: %d shown, want %d", got, all)
		}
		b.click("#events tr.fold button")
		if got := visible("#events tbody tr"); got != 20 {
			t.Errorf("folded again: %d shown, want 20", got)
		}
		b.click(".joinset tr.fold button")
		b.click(`.actions button[title^="Refresh"]`)
		b.waitFor("the children unfolded after the refresh", `[...document.querySelectorAll('.joinset tbody tr')].filter((r) => !r.hidden && !r.classList.contains('fold')).length === 100`)
		b.noErrors()
	})
}

func TestConsoleAsksForTheToken(t *testing.T) {
	chromiumPath(t)
	d := startDev(t, t.TempDir(), "--token", "s3cret")
	defer d.stop(t)
	b := newTab(t, d.url)
	b.open("/console/")
	b.waitFor("the token prompt", `document.querySelector('dialog[open] #token-input')`)
	b.setValue("#token-input", "wrong")
	b.confirmDialog()
	b.waitFor("the prompt again", `document.querySelector('dialog[open] #token-input')`)
	if !b.bodyContains("refused") {
		t.Errorf("second prompt does not say the token was refused:\n%s", b.bodyText())
	}
	b.setValue("#token-input", "s3cret")
	b.confirmDialog()
	b.waitFor("the list", `document.querySelector('main .empty') && document.querySelector('main .empty').textContent.includes('No executions yet')`)
	if got := b.str(`sessionStorage.getItem('stela.apiToken') || ''`); got != "s3cret" {
		t.Errorf("token kept = %q", got)
	}
	// A reload keeps the token for the tab: no prompt.
	b.open("/console/submit")
	b.waitFor("the submit form", `document.querySelector('#s-ffqn')`)
	if b.num(`document.querySelectorAll('dialog[open]').length`) != 0 {
		t.Errorf("prompted again after a reload")
	}
	b.noErrors()
}

// runWorker runs w until the returned function is called, which stops it
// and fails t if Run returned an error: `defer runWorker(ctx, t, w)()`.
func runWorker(ctx context.Context, t *testing.T, w *sdk.Worker) func() {
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	return func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
