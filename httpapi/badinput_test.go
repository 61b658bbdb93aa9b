package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// testBadInput sends the bad input of issue 24 (items 1–5, 7 and 9) to the
// worker and public routes: each is a 4xx naming the field, in the API's
// words, and writes nothing (rejectAll compares the whole store before and
// after).
func testBadInput(t *testing.T, fresh func(*testing.T, ...envOption) *env) {
	e := fresh(t)
	pending := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	locked := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	e.lock(locked, core.ComponentTypeActivity) // next version 2
	other := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	e.lock(other, core.ComponentTypeActivity)

	// lock builds a lock-pending body with fields replaced or added.
	lock := func(fields map[string]any) map[string]any {
		b := lockParams(core.ComponentTypeActivity, t0.Add(time.Minute))
		b["ffqns"], b["batch_size"] = []core.FunctionFqn{ffqnActivity}, 8
		for k, v := range fields {
			if v == nil {
				delete(b, k)
			} else {
				b[k] = v
			}
		}
		return b
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	// appendTo builds an append body for locked at version 2.
	appendTo := func(createdAt, event string) string {
		return `{"execution_id":"` + locked.String() + `","version":2,"req":{"created_at":` + createdAt + `,"event":` + event + `}}`
	}
	finished := `{"finished":{"retval":{"ok":null},"http_client_traces":null}}`
	create := func(scheduledAt, params string) string {
		id, _ := core.NewExecutionId(uint64(t0.UnixMilli()), nil)
		return `{"created_at":"2026-01-01T00:00:00Z","execution_id":"` + id.String() + `","ffqn":"` + ffqnActivity.String() +
			`","params":` + params + `,"parent":null,"scheduled_at":` + scheduledAt + `,"component_id":{"component_type":"activity","name":"","component_digest":"` +
			core.ComponentDigest{}.String() + `"},"deployment_id":"` + core.DeploymentId{}.String() + `","metadata":{},"scheduled_by":null}`
	}
	// createLocked builds a create-locked body of a create request and a lock.
	createLocked := func(req string, lock map[string]any) string {
		b, err := json.Marshal(lock)
		if err != nil {
			t.Fatal(err)
		}
		return `{"request":` + req + `,"lock":` + string(b) + `}`
	}
	// createLockedMany builds a create-locked body of a batch of create requests and a lock.
	createLockedMany := func(reqs []string, lock map[string]any) string {
		b, err := json.Marshal(lock)
		if err != nil {
			t.Fatal(err)
		}
		return `{"requests":[` + strings.Join(reqs, ",") + `],"lock":` + string(b) + `}`
	}
	nCreates := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = create(`"2026-01-01T00:00:00Z"`, "[]")
		}
		return out
	}
	// many builds a many-write of one append item per execution, item i
	// carrying items[i] as its created_at and retval.
	many := func(items ...[2]string) string {
		var parts []string
		for i, it := range items {
			id := []core.ExecutionId{locked, other, locked, other}[i]
			parts = append(parts, `{"append":{"execution_id":"`+id.String()+`","version":2,"batch":[{"created_at":`+it[0]+
				`,"event":{"finished":{"retval":`+it[1]+`,"http_client_traces":null}}}]}}`)
		}
		return `{"items":[` + strings.Join(parts, ",") + `]}`
	}
	const (
		y10000  = `"9999-12-31T23:59:59-01:00"`
		now     = `"2026-01-01T00:00:00Z"`
		okNull  = `{"ok":null}`
		outside = "year 10000 in UTC is outside 0000–9999"
	)
	e.rejectAll(t, []badReq{
		// 1. Timestamps outside 0000–9999 in UTC, and offsets out of range.
		{name: "LockExpiresAtYear10000", method: "POST", path: "/v1/worker/lock/pending-by-ffqns", body: lock(map[string]any{"lock_expires_at": raw(y10000)}),
			status: 400, msg: `invalid timestamp "9999-12-31T23:59:59-01:00": ` + outside + " at `lock_expires_at`"},
		{name: "LockOneExpiresAtYear10000", method: "POST", path: "/v1/worker/lock/one",
			body:   lock(map[string]any{"lock_expires_at": raw(y10000), "execution_id": pending, "version": 1, "ffqns": nil, "batch_size": nil}),
			status: 400, msg: `invalid timestamp "9999-12-31T23:59:59-01:00": ` + outside + " at `lock_expires_at`"},
		{name: "LockedEventYear10000", method: "POST", path: "/v1/worker/append", body: appendTo(now, `{"locked":{"component_id":{"component_type":"activity","name":"","component_digest":"`+
			core.ComponentDigest{}.String()+`"},"executor_id":"`+testExecutor.String()+`","deployment_id":"`+core.DeploymentId{}.String()+`","run_id":"`+testRun.String()+
			`","lock_expires_at":`+y10000+`,"retry_config":{"max_retries":0,"retry_exp_backoff":{"secs":0,"nanos":0}}}}`),
			status: 400, msg: `invalid timestamp "9999-12-31T23:59:59-01:00": ` + outside + " at `req.event.locked.lock_expires_at`"},
		{name: "TemporarilyFailedYear10000", method: "POST", path: "/v1/worker/append",
			body:   appendTo(now, `{"temporarily_failed":{"backoff_expires_at":`+y10000+`,"reason":"r","detail":null,"http_client_traces":null}}`),
			status: 400, msg: `invalid timestamp "9999-12-31T23:59:59-01:00": ` + outside + " at `req.event.temporarily_failed.backoff_expires_at`"},
		{name: "CreateScheduledAtYearMinus1", method: "POST", path: "/v1/worker/create", body: create(`"0000-01-01T00:00:00+05:00"`, "[]"),
			status: 400, msg: `invalid timestamp "0000-01-01T00:00:00+05:00": year -1 in UTC is outside 0000–9999 at ` + "`scheduled_at`"},
		{name: "AppendCreatedAtYear10000", method: "POST", path: "/v1/worker/append", body: appendTo(y10000, finished),
			status: 400, msg: `invalid timestamp "9999-12-31T23:59:59-01:00": ` + outside + " at `req.created_at`"},
		{name: "LogCreatedAtYear10000", method: "POST", path: "/v1/worker/logs",
			body:   `{"logs":[{"execution_id":"` + locked.String() + `","run_id":"` + testRun.String() + `","created_at":` + y10000 + `,"type":"log","level":"info","message":"m"}]}`,
			status: 400, msg: `invalid timestamp "9999-12-31T23:59:59-01:00": ` + outside + " at `logs[0].created_at`"},
		{name: "CurrentTimeYear10000", method: "POST", path: "/v1/worker/append-batch",
			body:   `{"current_time":` + y10000 + `,"execution_id":"` + locked.String() + `","version":2,"batch":[{"created_at":` + now + `,"event":` + finished + `}]}`,
			status: 400, msg: `invalid timestamp "9999-12-31T23:59:59-01:00": ` + outside + " at `current_time`"},
		{name: "OffsetHours24", method: "POST", path: "/v1/worker/append", body: appendTo(`"2026-01-01T00:00:00+24:00"`, finished),
			status: 400, msg: `invalid timestamp "2026-01-01T00:00:00+24:00": offset hours must be 00–23 at ` + "`req.created_at`"},
		{name: "OffsetMinutes60", method: "POST", path: "/v1/worker/append", body: appendTo(`"2026-01-01T00:00:00+01:60"`, finished),
			status: 400, msg: `invalid timestamp "2026-01-01T00:00:00+01:60": offset minutes must be 00–59 at ` + "`req.created_at`"},

		// 3. Numbers beyond the 64-bit float range (serde_json: "number out of range").
		{name: "SubmitParams1e400", method: "POST", path: "/v1/executions", body: `{"ffqn":"` + ffqnActivity.String() + `","params":[1e400]}`,
			status: 400, msg: "invalid JSON: number out of range `1e400` at `params[0]`"},
		{name: "PutParamsMinus1e309", method: "PUT", path: "/v1/executions/" + pending.String(), body: `{"ffqn":"` + ffqnActivity.String() + `","params":[{"a":-1e309}]}`,
			status: 400, msg: "invalid JSON: number out of range `-1e309` at `params[0].a`"},
		{name: "SubmitParams400Digits", method: "POST", path: "/v1/executions", body: `{"ffqn":"` + ffqnActivity.String() + `","params":[` + strings.Repeat("9", 400) + `]}`,
			status: 400, msg: "invalid JSON: number out of range `" + strings.Repeat("9", 32) + "…` at `params[0]`"},
		{name: "CreateParams1e400", method: "POST", path: "/v1/worker/create", body: create(now, "[1e400]"),
			status: 400, msg: "invalid JSON: number out of range `1e400` at `params[0]`"},
		{name: "ReturnValueF64Beyond", method: "POST", path: "/v1/worker/append", body: appendTo(now, `{"finished":{"retval":{"ok":{"type":"f64","value":1e400}},"http_client_traces":null}}`),
			status: 400, msg: "invalid JSON: number out of range `1e400` at `req.event.finished.retval.ok.value`"},
		{name: "ManyWithOneNumberBeyond", method: "POST", path: "/v1/worker/append-batch/many",
			body:   many([2]string{now, okNull}, [2]string{now, okNull}, [2]string{now, `{"ok":{"type":"f64","value":1e400}}`}, [2]string{now, okNull}),
			status: 400, msg: "invalid JSON: number out of range `1e400` at `items[2].append.batch[0].event.finished.retval.ok.value`"},

		// 4. Durations beyond the documented maximum.
		{name: "BackoffSecsU64Max", method: "POST", path: "/v1/worker/lock/pending-by-ffqns",
			body:   lock(map[string]any{"retry_config": raw(`{"max_retries":3,"retry_exp_backoff":{"secs":18446744073709551615,"nanos":0}}`)}),
			status: 400, msg: "duration of 18446744073709551615 s is longer than the maximum, {\"secs\":9223372036,\"nanos\":854775807} (2^63-1 ns, about 292 years) at `retry_config.retry_exp_backoff`"},
		{name: "BackoffMillisBeyondI64", method: "POST", path: "/v1/worker/lock/pending-by-ffqns",
			body:   lock(map[string]any{"retry_config": raw(`{"max_retries":3,"retry_exp_backoff":{"secs":9223372036854776,"nanos":0}}`)}),
			status: 400, msg: "duration of 9223372036854776 s is longer than the maximum, {\"secs\":9223372036,\"nanos\":854775807} (2^63-1 ns, about 292 years) at `retry_config.retry_exp_backoff`"},

		// 5. Unknown fields, at every depth; keys match exactly.
		{name: "BackoffUnknownField", method: "POST", path: "/v1/worker/lock/pending-by-ffqns",
			body:   lock(map[string]any{"retry_config": raw(`{"max_retries":0,"retry_exp_backoff":{"secs":0,"nanos":0,"x":1}}`)}),
			status: 422, msg: "invalid request body: unknown field `x` at `retry_config.retry_exp_backoff`"},
		{name: "RetryConfigUnknownField", method: "POST", path: "/v1/worker/lock/pending-by-ffqns",
			body:   lock(map[string]any{"retry_config": raw(`{"max_retries":0,"retry_exp_backoff":{"secs":0,"nanos":0},"max_retry":1}`)}),
			status: 422, msg: "invalid request body: unknown field `max_retry` at `retry_config`"},
		{name: "ComponentIDUnknownField", method: "POST", path: "/v1/worker/lock/pending-by-ffqns",
			body:   lock(map[string]any{"component_id": raw(`{"component_type":"activity","name":"","component_digest":"` + core.ComponentDigest{}.String() + `","version":1}`)}),
			status: 422, msg: "invalid request body: unknown field `version` at `component_id`"},
		{name: "TopLevelKeyOfOtherCase", method: "POST", path: "/v1/worker/lock/pending-by-ffqns", body: lock(map[string]any{"Wait_Ms": 1}),
			status: 422, msg: "invalid request body: unknown field `Wait_Ms`"},
		{name: "EventUnknownField", method: "POST", path: "/v1/worker/append", body: appendTo(now, `{"finished":{"retval":{"ok":null},"http_client_traces":null,"y":1}}`),
			status: 422, msg: "invalid request body: unknown field `y` at `req.event.finished`"},

		// 6. Documented string limits, before any backend is touched.
		{name: "SubmitFFQNOfAMillionBytes", method: "POST", path: "/v1/executions", body: `{"ffqn":"a:b/c.` + strings.Repeat("f", 1_000_000) + `","params":[]}`,
			status: 400, msg: "function fqn of 1000006 bytes is longer than the maximum of 512 bytes at `ffqn`"},
		{name: "CreateFFQNOf513Bytes", method: "POST", path: "/v1/worker/create", body: strings.Replace(create(now, "[]"), ffqnActivity.String(), "a:b/c."+strings.Repeat("f", 507), 1),
			status: 400, msg: "function fqn of 513 bytes is longer than the maximum of 512 bytes at `ffqn`"},
		{name: "LockFFQNTooLong", method: "POST", path: "/v1/worker/lock/pending-by-ffqns", body: lock(map[string]any{"ffqns": []string{ffqnActivity.String(), "a:b/c." + strings.Repeat("f", 600)}}),
			status: 400, msg: "function fqn of 606 bytes is longer than the maximum of 512 bytes at `ffqns[1]`"},
		{name: "ExecutionIDTooLongInThePath", method: "PUT", path: "/v1/executions/" + pending.String() + strings.Repeat(".g:1_1", 90), body: `{"ffqn":"` + ffqnActivity.String() + `","params":[]}`,
			status: 400, msg: "invalid execution id \"" + (pending.String() + strings.Repeat(".g:1_1", 90))[:128] + "…\": execution id of 568 bytes is longer than the maximum of 512 bytes"},
		{name: "ChildIDTooLongInABody", method: "POST", path: "/v1/worker/append",
			body:   appendTo(now, `{"history_event":{"event":{"type":"join_set_create","join_set_id":"n:`+strings.Repeat("a", 127)+`"}}}`),
			status: 400, msg: "join set id of 129 bytes is longer than the maximum of 128 bytes at `req.event.history_event.event.join_set_id`"},
		{name: "ComponentNameTooLong", method: "POST", path: "/v1/worker/lock/pending-by-ffqns",
			body:   lock(map[string]any{"component_id": raw(`{"component_type":"activity","name":"` + strings.Repeat("n", 513) + `","component_digest":"` + core.ComponentDigest{}.String() + `"}`)}),
			status: 400, msg: "component name of 513 bytes is longer than the maximum of 512 bytes at `component_id.name`"},
		{name: "LogMessageTooLong", method: "POST", path: "/v1/worker/logs",
			body:   `{"logs":[{"execution_id":"` + locked.String() + `","run_id":"` + testRun.String() + `","created_at":` + now + `,"type":"log","level":"info","message":"` + strings.Repeat("m", 64<<10+1) + `"}]}`,
			status: 400, msg: "log message of 65537 bytes is longer than the maximum of 65536 bytes at `logs[0].message`"},

		// 7. A many-write names the item and the path, in the API's words.
		{name: "ManyItemOfWrongType", method: "POST", path: "/v1/worker/append-batch/many",
			body: `{"items":[{"append":{"execution_id":"` + locked.String() + `","version":2,"batch":[{"created_at":` + now + `,"event":` + finished + `}]}},` +
				`{"append":{"execution_id":"` + other.String() + `","version":"2","batch":[{"created_at":` + now + `,"event":` + finished + `}]}}]}`,
			status: 422, msg: "invalid request body: invalid type: string \"2\", expected an integer from 0 to 4294967295 at `items[1].append.version`"},
		{name: "ManyItemMissingField", method: "POST", path: "/v1/worker/append-batch/many",
			body:   `{"items":[{"append":{"execution_id":"` + locked.String() + `","version":2,"batch":[{"event":` + finished + `}]}}]}`,
			status: 422, msg: "invalid request body: missing field `created_at` at `items[0].append.batch[0]`"},

		// 9. Event times within MaxClockSkew of the server's clock.
		{name: "AppendCreatedAtDaysBehind", method: "POST", path: "/v1/worker/append", body: appendTo(`"2025-01-30T00:00:00Z"`, finished),
			status: 400, msg: "`req.created_at` 2025-01-30T00:00:00Z is 336 days behind the server's clock (2026-01-01T00:00:00Z): event times may be at most 1h0m0s behind it and 5m0s ahead"},
		{name: "AppendCreatedAtAnHourAndAMinuteBehind", method: "POST", path: "/v1/worker/append", body: appendTo(`"2025-12-31T22:59:00Z"`, finished),
			status: 400, msg: "`req.created_at` 2025-12-31T22:59:00Z is 1h1m0s behind the server's clock (2026-01-01T00:00:00Z): event times may be at most 1h0m0s behind it and 5m0s ahead"},
		{name: "LockCreatedAtAnHourAhead", method: "POST", path: "/v1/worker/lock/pending-by-ffqns",
			body:   lock(map[string]any{"created_at": t0.Add(time.Hour), "lock_expires_at": t0.Add(2 * time.Hour)}),
			status: 400, msg: "`created_at` 2026-01-01T01:00:00Z is 1h0m0s ahead of the server's clock (2026-01-01T00:00:00Z): event times may be at most 5m0s ahead of it and 1h0m0s behind"},
		{name: "ManyWithOneItemADayOff", method: "POST", path: "/v1/worker/append-batch/many",
			body:   many([2]string{now, okNull}, [2]string{`"2026-01-02T00:00:00Z"`, okNull}),
			status: 400, msg: "`items[1].append.batch[0].created_at` 2026-01-02T00:00:00Z is 24h0m0s ahead of the server's clock (2026-01-01T00:00:00Z): event times may be at most 5m0s ahead of it and 1h0m0s behind"},
		{name: "CreateCreatedAtDaysAhead", method: "POST", path: "/v1/worker/create", body: strings.Replace(create(now, "[]"), now, `"2026-02-01T00:00:00Z"`, 1),
			status: 400, msg: "`created_at` 2026-02-01T00:00:00Z is 31 days ahead of the server's clock (2026-01-01T00:00:00Z): event times may be at most 5m0s ahead of it and 1h0m0s behind"},
		// Eager start (create-locked): the lock takes one execution, names its functions, and the request's times are bounded.
		{name: "CreateLockedBatchOf2", method: "POST", path: wire.PathWorkerCreateLocked, body: createLocked(create(now, "[]"), lock(map[string]any{"batch_size": 2})),
			status: 400, msg: "`lock.batch_size` must be 1 (one execution is created)"},
		{name: "CreateLockedNoFFQNs", method: "POST", path: wire.PathWorkerCreateLocked, body: createLocked(create(now, "[]"), lock(map[string]any{"batch_size": 1, "ffqns": []string{}})),
			status: 400, msg: "`lock.ffqns` must name at least one function"},
		{name: "CreateLockedCreatedAtDaysAhead", method: "POST", path: wire.PathWorkerCreateLocked,
			body:   createLocked(strings.Replace(create(now, "[]"), now, `"2026-02-01T00:00:00Z"`, 1), lock(map[string]any{"batch_size": 1})),
			status: 400, msg: "`request.created_at` 2026-02-01T00:00:00Z is 31 days ahead…"},
		// A batch of eager starts: requests or request, batch_size its length, 1..100 of them, each time bounded.
		{name: "CreateLockedRequestAndRequests", method: "POST", path: wire.PathWorkerCreateLocked,
			body:   strings.Replace(createLockedMany(nCreates(1), lock(map[string]any{"batch_size": 1})), `{"requests"`, `{"request":`+create(now, "[]")+`,"requests"`, 1),
			status: 400, msg: "the body must have exactly one of `request` and `requests`"},
		{name: "CreateLockedNoRequest", method: "POST", path: wire.PathWorkerCreateLocked,
			body:   strings.Replace(createLockedMany(nil, lock(map[string]any{"batch_size": 1})), `"requests":[],`, ``, 1),
			status: 400, msg: "the body must have exactly one of `request` and `requests`"},
		{name: "CreateLockedManyBatchSizeNotTheirNumber", method: "POST", path: wire.PathWorkerCreateLocked,
			body:   createLockedMany(nCreates(2), lock(map[string]any{"batch_size": 3})),
			status: 400, msg: "`lock.batch_size` must be the number of `requests` (2), got 3"},
		{name: "CreateLockedManyNone", method: "POST", path: wire.PathWorkerCreateLocked,
			body:   createLockedMany(nil, lock(map[string]any{"batch_size": 0})),
			status: 400, msg: "`requests` must have between 1 and 100 entries, got 0"},
		{name: "CreateLockedManyTooMany", method: "POST", path: wire.PathWorkerCreateLocked,
			body:   createLockedMany(nCreates(101), lock(map[string]any{"batch_size": 101})),
			status: 400, msg: "`requests` must have between 1 and 100 entries, got 101"},
		{name: "CreateLockedManyNoFFQNs", method: "POST", path: wire.PathWorkerCreateLocked,
			body:   createLockedMany(nCreates(2), lock(map[string]any{"batch_size": 2, "ffqns": []string{}})),
			status: 400, msg: "`lock.ffqns` must name at least one function"},
		{name: "CreateLockedManyOneCreatedAtDaysAhead", method: "POST", path: wire.PathWorkerCreateLocked,
			body:   createLockedMany([]string{create(now, "[]"), strings.Replace(create(now, "[]"), now, `"2026-02-01T00:00:00Z"`, 1)}, lock(map[string]any{"batch_size": 2})),
			status: 400, msg: "`requests[1].created_at` 2026-02-01T00:00:00Z is 31 days ahead…"},
		// A worker's fire of the delay it awaits names a delay.
		{name: "FireDelayNotADelayID", method: "POST", path: "/v1/worker/delays/" + locked.String() + "/fire",
			status: 400, msg: `invalid delay id "` + locked.String() + `": first delimiter not found`},
	})

	t.Run("EventTimesWithinTheSkewAreKept", func(t *testing.T) {
		e.do("POST", "/v1/worker/append", appendTo(`"2026-01-01T00:04:59Z"`, finished)).want(http.StatusOK)
		var ev core.ListExecutionEventsResponse
		e.do("GET", "/v1/executions/"+locked.String()+"/events?version=2&including_cursor=true", nil).want(http.StatusOK).decode(&ev)
		if len(ev.Events) != 1 || ev.Events[0].CreatedAt.String() != "2026-01-01T00:04:59Z" {
			t.Fatalf("events from version 2: %+v", ev.Events)
		}
		// A worker's buffered or retried events may be older: up to MaxEventAge.
		e.do("POST", "/v1/worker/append", `{"execution_id":"`+other.String()+`","version":2,"req":{"created_at":"2025-12-31T23:01:00Z","event":`+finished+`}}`).
			want(http.StatusOK)
	})
	t.Run("ThePendingExecutionIsStillLockable", func(t *testing.T) {
		var got []wire.LockedExecutionJSON
		e.do("POST", "/v1/worker/lock/pending-by-ffqns", lock(nil)).want(http.StatusOK).decode(&got)
		if len(got) != 1 || got[0].ExecutionID != pending {
			t.Fatalf("locked %+v, want %s", got, pending)
		}
	})
}

// testSweepAtServerTime (issue 24 item 2): a sweep runs at the server's
// clock. An `at` ahead of it by more than the skew bound is 400 and expires
// nothing; one ahead within the bound runs at the server's clock, so no live
// lock expires before its lease ends; an earlier `at` is kept (it expires
// less).
func testSweepAtServerTime(t *testing.T, newDB func(t *testing.T) core.DbExternalApi) {
	db := newDB(t)
	e := newEnv(t, db, func(o *Options) {
		o.Sweep = func(ctx context.Context, at core.Timestamp) (any, error) { return sweepOnce(ctx, db, at) }
	})
	locked := e.submit(ffqnActivity, core.ComponentTypeActivity, "[]")
	body := lockParams(core.ComponentTypeActivity, t0.Add(2*time.Minute)) // leased until t0+2m
	body["execution_id"], body["version"] = locked, 1
	e.do("POST", "/v1/worker/lock/one", body).want(http.StatusOK)
	e.rejectAll(t, []badReq{
		{name: "AtYear10000", method: "POST", path: "/v1/worker/sweep", body: `{"at":"9999-12-31T23:59:59-01:00"}`,
			status: 400, msg: `invalid timestamp "9999-12-31T23:59:59-01:00": year 10000 in UTC is outside 0000–9999 at ` + "`at`"},
		{name: "AtFarAhead", method: "POST", path: "/v1/worker/sweep", body: `{"at":"9999-12-31T23:59:59Z"}`,
			status: 400, msg: "`at` 9999-12-31T23:59:59Z is ahead of the server's clock (2026-01-01T00:00:00Z) by more than 5m0s: a sweep runs at the server's time"},
	})
	sweep := func(body string) map[string]int {
		t.Helper()
		var res map[string]int
		e.do("POST", "/v1/worker/sweep", body).want(http.StatusOK).decode(&res)
		return res
	}
	if res := sweep(`{"at":"2026-01-01T00:04:00Z"}`); res["expired_locks"] != 0 {
		t.Fatalf("a sweep 4 min ahead expired a lock leased for 2 min: %v", res)
	}
	var st core.ExecutionWithState
	e.do("GET", "/v1/executions/"+locked.String()+"/status", nil).want(http.StatusOK).decode(&st)
	if st.PendingState.State != core.StateLocked {
		t.Fatalf("state %v after the early sweep, want locked", st.PendingState.State)
	}
	e.clock.Set(t0.Add(3 * time.Minute))
	if res := sweep(`{"at":"2026-01-01T00:01:00Z"}`); res["expired_locks"] != 0 {
		t.Fatalf("a sweep at an earlier at expired the lock: %v", res)
	}
	if res := sweep(""); res["expired_locks"] != 1 {
		t.Fatalf("a sweep at the server's clock, past the lease: %v, want 1 expired lock", res)
	}
}
