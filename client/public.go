package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// --- submit and results -------------------------------------------------------------------

// SubmitRequest is the body of PUT /v1/executions/{id}.
type SubmitRequest struct {
	FFQN core.FunctionFqn `json:"ffqn"`
	// Params are the function's arguments as JSON values (nil: none).
	Params core.Params `json:"params"`
	// Paused creates the execution paused.
	Paused bool `json:"paused,omitempty"`
	// ComponentType is used only by a server without deployments (default activity).
	ComponentType core.ComponentType `json:"component_type,omitempty"`
}

// Submit creates the top-level execution id, idempotently: resubmitting the
// same request answers created=false; the id with other params is
// core.ErrConflict, an ffqn the deployment does not export core.ErrNotFound.
// Safe to retry, and retried.
func (c *Client) Submit(ctx context.Context, id core.ExecutionId, req SubmitRequest) (created bool, err error) {
	if req.Params == nil {
		req.Params = core.Params{}
	}
	resp, err := c.post(ctx, http.MethodPut, wire.Path(wire.PathExecution, id.String()), req, idempotent, nil)
	if err != nil {
		return false, err
	}
	return resp.Status == http.StatusCreated, nil
}

// SubmitNew generates a top-level id (here, from the clock and crypto/rand)
// and submits req under it, so that retries stay idempotent.
func (c *Client) SubmitNew(ctx context.Context, req SubmitRequest) (core.ExecutionId, error) {
	id, err := core.NewExecutionId(uint64(time.Now().UnixMilli()), rand.Reader)
	if err != nil {
		return core.ExecutionId{}, err
	}
	_, err = c.Submit(ctx, id, req)
	return id, err
}

// GenerateExecutionID asks the server for a new top-level id (GET /v1/execution-id).
func (c *Client) GenerateExecutionID(ctx context.Context) (core.ExecutionId, error) {
	var id core.ExecutionId
	err := c.get(ctx, wire.PathExecutionID, nil, &id)
	return id, err
}

// Result returns the untyped result of a finished execution as the public
// route renders it (Obelisk's RetVal: {"ok": v}, {"err": v} or
// {"execution_failed": {…}}, compacted); an unfinished execution is ErrNotFinished.
// WaitForFinishedResult returns the typed core.ReturnValue instead.
func (c *Client) Result(ctx context.Context, id core.ExecutionId) (json.RawMessage, error) {
	var out json.RawMessage
	if err := c.get(ctx, wire.Path(wire.PathExecution, id.String()), nil, &out); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, out); err != nil {
		return nil, fmt.Errorf("client: result of %s: %w", id, err)
	}
	return b.Bytes(), nil
}

// --- listings -------------------------------------------------------------------------------

func direction(d core.Direction) string {
	if d == core.OlderThan {
		return "older"
	}
	return "newer"
}

func pageQuery(dir core.Direction, length uint16, including bool) url.Values {
	q := url.Values{"direction": {direction(dir)}, "length": {strconv.Itoa(int(length))}}
	if including {
		q.Set("including_cursor", "true")
	}
	return q
}

// ListExecutions implements core.DbExternalApi's method over
// GET /v1/executions. The route filters by function name prefix
// (FunctionName of kind "function" or "interface"), derived, finished, id
// prefix, digest and deployment; other filters are a *core.ValidationError.
// A CreatedBy cursor with CreatedByID is sent as the position
// (cursor, cursor_execution_id); an ExecutionID pagination as
// order=execution_id. Pages hold at most wire.MaxPageLength executions.
func (c *Client) ListExecutions(ctx context.Context, filter core.ListExecutionsFilter, p core.ExecutionListPagination) ([]core.ExecutionWithState, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	q, err := listQuery(filter)
	if err != nil {
		return nil, err
	}
	switch {
	case p.CreatedBy != nil:
		for k, v := range pageQuery(p.CreatedBy.Direction, p.CreatedBy.Length, p.CreatedBy.IncludingCursor) {
			q[k] = v
		}
		if p.CreatedBy.Cursor != nil {
			q.Set("cursor", p.CreatedBy.Cursor.String())
		}
		if p.CreatedByID != nil {
			q.Set("cursor_execution_id", p.CreatedByID.String())
		}
	case p.ExecutionID != nil:
		for k, v := range pageQuery(p.ExecutionID.Direction, p.ExecutionID.Length, p.ExecutionID.IncludingCursor) {
			q[k] = v
		}
		q.Set("order", "execution_id")
		if p.ExecutionID.Cursor != nil {
			q.Set("cursor", p.ExecutionID.Cursor.String())
		}
	}
	list, _, err := c.listExecutionsPage(ctx, q)
	return list, err
}

// listQuery renders the filters GET /v1/executions has.
func listQuery(filter core.ListExecutionsFilter) (url.Values, error) {
	q := url.Values{}
	if f := filter.FunctionName; f != nil {
		if f.Kind == "package" {
			return nil, &core.ValidationError{Reason: "client: the list route filters by function name prefix only"}
		}
		q.Set("ffqn_prefix", f.Value)
	}
	if len(filter.StateFilters) > 0 {
		return nil, &core.ValidationError{Reason: "client: the list route has no state filter"}
	}
	if filter.ShowDerived {
		q.Set("show_derived", "true")
	}
	if filter.HideFinished {
		q.Set("hide_finished", "true")
	}
	if filter.ExecutionIDPrefix != "" {
		q.Set("execution_id_prefix", filter.ExecutionIDPrefix)
	}
	if filter.ComponentDigest != nil {
		q.Set("component_digest", filter.ComponentDigest.String())
	}
	if filter.DeploymentID != nil {
		q.Set("deployment_id", filter.DeploymentID.String())
	}
	return q, nil
}

// listExecutionsPage reads one page and the query of the next one, from
// the answer's Link: <?…>; rel="next" (nil after the last page).
func (c *Client) listExecutionsPage(ctx context.Context, q url.Values) ([]core.ExecutionWithState, url.Values, error) {
	var out []core.ExecutionWithState
	resp, err := c.call(ctx, &request{method: http.MethodGet, path: wire.PathExecutions, query: q, accept: JSON, safety: idempotent}, &out)
	if err != nil {
		return nil, nil, err
	}
	next, err := nextLink(resp.Header.Values("Link"))
	if err != nil {
		return nil, nil, fmt.Errorf("client: GET /v1/executions: %w", err)
	}
	return out, next, nil
}

// nextLink returns the query of the rel="next" link among Link header
// values (RFC 8288), nil when there is none.
func nextLink(values []string) (url.Values, error) {
	for _, v := range values {
		for _, link := range strings.Split(v, ",") {
			link = strings.TrimSpace(link)
			ref, params, ok := strings.Cut(link, ">")
			if !ok || !strings.HasPrefix(ref, "<") {
				continue
			}
			next := false
			for _, p := range strings.Split(params, ";") {
				name, val, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(name, "rel") && strings.Trim(val, `"`) == "next" {
					next = true
				}
			}
			if !next {
				continue
			}
			u, err := url.Parse(ref[1:])
			if err != nil {
				return nil, fmt.Errorf("Link %q: %w", link, err)
			}
			return u.Query(), nil
		}
	}
	return nil, nil
}

// Executions iterates over every execution matching filter, newest first by
// creation time (ties by execution id), fetching pages of pageSize
// (1…wire.MaxPageLength): the first without a cursor, each next one as
// the server's Link: rel="next" says, so that executions created in the same
// instant are seen exactly once. Iteration stops at the first error, which
// it yields.
func (c *Client) Executions(ctx context.Context, filter core.ListExecutionsFilter, pageSize uint16) iter.Seq2[core.ExecutionWithState, error] {
	return func(yield func(core.ExecutionWithState, error) bool) {
		q, err := listQuery(filter)
		if err != nil {
			yield(core.ExecutionWithState{}, err)
			return
		}
		for k, v := range pageQuery(core.OlderThan, pageSize, false) {
			q[k] = v
		}
		for q != nil {
			page, next, err := c.listExecutionsPage(ctx, q)
			if err != nil {
				yield(core.ExecutionWithState{}, err)
				return
			}
			for _, e := range page {
				if !yield(e, nil) {
					return
				}
			}
			q = next
		}
	}
}

// ListExecutionEvents implements core.DbExternalApi's method over
// GET /v1/executions/{id}/events (pages of at most wire.MaxPageLength).
func (c *Client) ListExecutionEvents(ctx context.Context, id core.ExecutionId, p core.Pagination[core.Version], includeBacktraceID bool) (core.ListExecutionEventsResponse, error) {
	if err := p.Validate(); err != nil {
		return core.ListExecutionEventsResponse{}, err
	}
	q := pageQuery(p.Direction, p.Length, p.IncludingCursor)
	q.Set("version", strconv.FormatUint(uint64(p.Cursor), 10))
	if includeBacktraceID {
		q.Set("include_backtrace_id", "true")
	}
	var out core.ListExecutionEventsResponse
	err := c.get(ctx, wire.Path(wire.PathExecutionEvents, id.String()), q, &out)
	return out, err
}

// ListResponses implements core.DbExternalApi's method over
// GET /v1/executions/{id}/responses; the route filters by named join sets
// only (another js is a *core.ValidationError).
func (c *Client) ListResponses(ctx context.Context, id core.ExecutionId, p core.Pagination[core.ResponseCursor], js *core.JoinSetId) (core.ListResponsesResponse, error) {
	if err := p.Validate(); err != nil {
		return core.ListResponsesResponse{}, err
	}
	q := pageQuery(p.Direction, p.Length, p.IncludingCursor)
	q.Set("cursor", strconv.FormatUint(uint64(p.Cursor), 10))
	if js != nil {
		if js.Kind != core.JoinSetKindNamed {
			return core.ListResponsesResponse{}, &core.ValidationError{Reason: "client: the responses route filters by named join sets only"}
		}
		q.Set("join_set", js.Name)
	}
	var out core.ListResponsesResponse
	err := c.get(ctx, wire.Path(wire.PathExecutionResponses, id.String()), q, &out)
	return out, err
}

// ListLogs implements core.DbExternalApi's method over
// GET /v1/executions/{id}/logs (the route has no CreatedBefore bound: a
// *core.ValidationError). NextPage and PrevPage are derived as the store does.
func (c *Client) ListLogs(ctx context.Context, id core.ExecutionId, showDerived bool, filter core.LogFilter, p core.Pagination[core.LogCursor]) (core.ListLogsResponse, error) {
	if err := p.Validate(); err != nil {
		return core.ListLogsResponse{}, err
	}
	if filter.CreatedBefore != nil {
		return core.ListLogsResponse{}, &core.ValidationError{Reason: "client: the logs route has no created-before bound"}
	}
	q := pageQuery(p.Direction, p.Length, p.IncludingCursor)
	if p.Cursor != core.LogCursorMin && p.Cursor != core.LogCursorMax {
		q.Set("cursor", wire.EncodeLogCursor(p.Cursor))
	}
	q.Set("show_logs", strconv.FormatBool(filter.ShowLogs))
	q.Set("show_streams", strconv.FormatBool(filter.ShowStreams))
	for _, l := range filter.Levels {
		name, ok := wire.LogLevelName(l)
		if !ok {
			return core.ListLogsResponse{}, &core.ValidationError{Reason: fmt.Sprintf("client: unknown log level %d", l)}
		}
		q.Add("level", name)
	}
	for _, s := range filter.StreamTypes {
		name, ok := wire.StreamTypeName(s)
		if !ok {
			return core.ListLogsResponse{}, &core.ValidationError{Reason: fmt.Sprintf("client: unknown stream type %d", s)}
		}
		q.Add("stream_type", name)
	}
	if showDerived {
		q.Set("show_derived", "true")
	}
	if filter.CreatedAfter != nil {
		q.Set("after", filter.CreatedAfter.String())
	}
	var items []wire.LogEntryJSON
	if err := c.get(ctx, wire.Path(wire.PathExecutionLogs, id.String()), q, &items); err != nil {
		return core.ListLogsResponse{}, err
	}
	rows := make([]core.LogEntryRow, len(items))
	for i, it := range items {
		row, err := it.Core()
		if err != nil {
			return core.ListLogsResponse{}, fmt.Errorf("client: logs of %s: %w", id, err)
		}
		rows[i] = row
	}
	return core.ListLogsFromPage(rows, p), nil
}

// --- operations -----------------------------------------------------------------------------------

// Cancel requests cancellation of an activity or a cancellable workflow
// (PUT /v1/executions/{id}/cancel): core.CancelRequested, or
// core.CancelAlreadyFinished / core.CancelAlreadyCancelling (not errors).
// Anything else that cannot be cancelled is a *core.IllegalStateError.
func (c *Client) Cancel(ctx context.Context, id core.ExecutionId) (core.CancelOutcome, error) {
	_, err := c.post(ctx, http.MethodPut, wire.Path(wire.PathExecutionCancel, id.String()), nil, idempotent, nil)
	switch {
	case err == nil:
		return core.CancelRequested, nil
	case errors.Is(err, core.ErrAlreadyFinished):
		return core.CancelAlreadyFinished, nil
	case errors.Is(err, errAlreadyCancelling):
		return core.CancelAlreadyCancelling, nil
	}
	return 0, err
}

// Pause pauses an execution (PUT …/pause). Not retried after an ambiguous
// failure: a repeat of a pause that committed is a *core.IllegalStateError.
func (c *Client) Pause(ctx context.Context, id core.ExecutionId) error {
	_, err := c.post(ctx, http.MethodPut, wire.Path(wire.PathExecutionPause, id.String()), nil, unsafe, nil)
	return err
}

// Unpause unpauses an execution (PUT …/unpause); retried like Pause.
func (c *Client) Unpause(ctx context.Context, id core.ExecutionId) error {
	_, err := c.post(ctx, http.MethodPut, wire.Path(wire.PathExecutionUnpause, id.String()), nil, unsafe, nil)
	return err
}

// Stub gives a stub child (a derived id of an activity_stub) its return
// value (PUT …/stub), idempotently: the same value again succeeds, another is
// core.ErrConflict.
func (c *Client) Stub(ctx context.Context, id core.ExecutionIdDerived, rv core.ReturnValue) error {
	_, err := c.post(ctx, http.MethodPut, wire.Path(wire.PathExecutionStub, id.String()), rv, idempotent, nil)
	return err
}

// Upgrade switches an execution from component digest old to new without a
// determinism check (PUT …/upgrade with skip_determinism_check).
func (c *Client) Upgrade(ctx context.Context, id core.ExecutionId, old, new core.ComponentDigest) error {
	body := map[string]any{"old": old, "new": new, "skip_determinism_check": true}
	_, err := c.post(ctx, http.MethodPut, wire.Path(wire.PathExecutionUpgrade, id.String()), body, idempotent, nil)
	return err
}

// UpgradeChecked moves an execution from component digest old to new
// only if a worker of digest new replays its history cleanly (PUT
// …/upgrade without skip_determinism_check; docs/http-api.md). nil: moved.
// Otherwise an *Error: 422 "Replay failed: version N: …" (the first
// divergence; the execution keeps old), 404 "new component not found…"
// (no worker of new took the check in time: nothing was done) or 404 "not
// found" (its digest is not old), 409 "already finished". It is retried
// only when it certainly was not processed: after a lost answer a second
// request would find the execution moved and answer 404 "not found".
func (c *Client) UpgradeChecked(ctx context.Context, id core.ExecutionId, old, new core.ComponentDigest) error {
	body := map[string]any{"old": old, "new": new, "skip_determinism_check": false}
	_, err := c.post(ctx, http.MethodPut, wire.Path(wire.PathExecutionUpgrade, id.String()), body, unsafe, nil)
	return err
}

// CancelDelay cancels a delay (PUT /v1/delays/{id}/cancel), idempotently:
// core.DelayCancelled, or core.DelayAlreadyFinished when it already fired.
func (c *Client) CancelDelay(ctx context.Context, delay core.DelayId) (core.DelayCancelOutcome, error) {
	_, err := c.post(ctx, http.MethodPut, wire.Path(wire.PathDelayCancel, delay.String()), nil, idempotent, nil)
	switch {
	case err == nil:
		return core.DelayCancelled, nil
	case errors.Is(err, core.ErrAlreadyFinished):
		return core.DelayAlreadyFinished, nil
	}
	return 0, err
}

// PauseDelay implements core.DbExternalApi's method (PUT /v1/delays/{id}/pause).
func (c *Client) PauseDelay(ctx context.Context, delay core.DelayId) error {
	_, err := c.post(ctx, http.MethodPut, wire.Path(wire.PathDelayPause, delay.String()), nil, idempotent, nil)
	return err
}

// UnpauseDelay implements core.DbExternalApi's method (PUT /v1/delays/{id}/unpause).
func (c *Client) UnpauseDelay(ctx context.Context, delay core.DelayId) error {
	_, err := c.post(ctx, http.MethodPut, wire.Path(wire.PathDelayUnpause, delay.String()), nil, idempotent, nil)
	return err
}

// --- backtraces, components, files, deployments -------------------------------------------------------

// backtraceQuery renders filter as the `version` parameter (Kind "" is last).
func backtraceQuery(filter core.BacktraceFilter) url.Values {
	switch filter.Kind {
	case "":
		return url.Values{"version": {"last"}}
	case "specific":
		return url.Values{"version": {strconv.FormatUint(uint64(filter.Specific), 10)}}
	}
	return url.Values{"version": {filter.Kind}}
}

// GetBacktrace implements core.DbExternalApi's method (GET …/backtrace).
func (c *Client) GetBacktrace(ctx context.Context, id core.ExecutionId, filter core.BacktraceFilter) (core.BacktraceInfo, error) {
	var out core.BacktraceInfo
	err := c.get(ctx, wire.Path(wire.PathBacktrace, id.String()), backtraceQuery(filter), &out)
	return out, err
}

// GetBacktraceSource returns a source file a backtrace refers to (GET …/backtrace/source).
func (c *Client) GetBacktraceSource(ctx context.Context, id core.ExecutionId, file string, filter core.BacktraceFilter) (string, error) {
	q := backtraceQuery(filter)
	q.Set("file", file)
	var out string
	err := c.get(ctx, wire.Path(wire.PathBacktraceSource, id.String()), q, &out)
	return out, err
}

// ComponentQuery filters ListComponents (zero values: no filter).
type ComponentQuery struct {
	// DeploymentID defaults to the current deployment.
	DeploymentID *core.DeploymentId
	Type         core.ComponentType
	Name         string
	Digest       *core.ComponentDigest
	// FFQN keeps components exporting this function.
	FFQN *core.FunctionFqn
	// Exports and Imports include the functions; Extensions their extension functions.
	Exports, Imports, Extensions bool
	// Submittable keeps exports with this flag.
	Submittable *bool
}

// ListComponents lists the components of a deployment (GET /v1/components).
func (c *Client) ListComponents(ctx context.Context, cq ComponentQuery) ([]wire.ComponentJSON, error) {
	q := url.Values{}
	if cq.DeploymentID != nil {
		q.Set("deployment_id", cq.DeploymentID.String())
	}
	if cq.Type != "" {
		q.Set("type", string(cq.Type))
	}
	if cq.Name != "" {
		q.Set("name", cq.Name)
	}
	if cq.Digest != nil {
		q.Set("digest", cq.Digest.String())
	}
	if cq.FFQN != nil {
		q.Set("ffqn", cq.FFQN.String())
	}
	for name, v := range map[string]bool{"exports": cq.Exports, "imports": cq.Imports, "extensions": cq.Extensions} {
		if v {
			q.Set(name, "true")
		}
	}
	if cq.Submittable != nil {
		q.Set("submittable", strconv.FormatBool(*cq.Submittable))
	}
	var out []wire.ComponentJSON
	err := c.get(ctx, wire.PathComponents, q, &out)
	return out, err
}

// GetComponentWit returns a component's WIT (GET /v1/components/{digest}/wit);
// dep nil is the current deployment.
func (c *Client) GetComponentWit(ctx context.Context, digest core.ComponentDigest, dep *core.DeploymentId) (string, error) {
	var q url.Values
	if dep != nil {
		q = url.Values{"deployment_id": {dep.String()}}
	}
	resp, err := c.call(ctx, &request{method: http.MethodGet, path: wire.Path(wire.PathComponentWit, digest.String()),
		query: q, accept: Text, safety: idempotent}, nil)
	if err != nil {
		return "", err
	}
	return string(resp.Body), nil
}

// GetFile reads a blob of the content-addressed store (GET /v1/files/{digest}).
func (c *Client) GetFile(ctx context.Context, digest core.ContentDigest) ([]byte, error) {
	resp, err := c.call(ctx, &request{method: http.MethodGet, path: wire.Path(wire.PathFile, digest.String()), safety: idempotent}, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// DeploymentQuery pages ListDeployments.
type DeploymentQuery struct {
	// Cursor and IncludingCursor page descending by id.
	Cursor          *core.DeploymentId
	IncludingCursor bool
	// Length is the page size (0: the server's default).
	Length uint16
	// IncludeDerived counts child executions too; IncludeComponentSummary
	// adds component counts per type.
	IncludeDerived, IncludeComponentSummary bool
}

// ListDeployments lists deployments with execution counts, descending by id
// (GET /v1/deployments).
func (c *Client) ListDeployments(ctx context.Context, dq DeploymentQuery) ([]wire.DeploymentStateJSON, error) {
	q := url.Values{}
	if dq.Cursor != nil {
		q.Set("cursor_from", dq.Cursor.String())
	}
	if dq.IncludingCursor {
		q.Set("including_cursor", "true")
	}
	if dq.Length > 0 {
		q.Set("length", strconv.Itoa(int(dq.Length)))
	}
	if dq.IncludeDerived {
		q.Set("include_derived", "true")
	}
	if dq.IncludeComponentSummary {
		q.Set("include_component_summary", "true")
	}
	var out []wire.DeploymentStateJSON
	err := c.get(ctx, wire.PathDeployments, q, &out)
	return out, err
}

// GetDeployment implements core.DbExternalApi's method (GET /v1/deployments/{id}).
func (c *Client) GetDeployment(ctx context.Context, dep core.DeploymentId) (core.DeploymentRecord, error) {
	var out wire.DeploymentJSON
	if err := c.get(ctx, wire.Path(wire.PathDeployment, dep.String()), nil, &out); err != nil {
		return core.DeploymentRecord{}, err
	}
	return out.Core(), nil
}

// GetCurrentDeploymentID returns the enqueued, else the active deployment
// (GET /v1/deployment-id); none is core.ErrNotFound.
func (c *Client) GetCurrentDeploymentID(ctx context.Context) (core.DeploymentId, error) {
	var out core.DeploymentId
	err := c.get(ctx, wire.PathDeploymentID, nil, &out)
	return out, err
}

// OpenAPI returns the server's OpenAPI 3.1 document.
func (c *Client) OpenAPI(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.get(ctx, wire.PathOpenAPI, nil, &out)
	return out, err
}
