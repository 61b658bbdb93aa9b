package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/obs/tracemeta"
)

// submitBody is the body of POST /v1/executions and PUT /v1/executions/{id}.
type submitBody struct {
	FFQN   *core.FunctionFqn `json:"ffqn" required:"true"`
	Params core.Params       `json:"params" required:"true"`
	Paused bool              `json:"paused"`
	// ComponentType is a Stela extension used only in unmanaged mode (no
	// deployment in storage); default "activity".
	ComponentType *core.ComponentType `json:"component_type"`
}

// Messages of the submit route (Obelisk's texts).
const (
	msgSubmitConflict = "execution already exists with the same id and different parameters"
	msgFFQNNotFound   = "ffqn not found"
	msgMustBeTopLevel = "must be a top-level execution id"
)

// POST /v1/executions
func (s *server) submitPost(c *call) error { return s.submit(c, nil) }

// PUT /v1/executions/{execution_id}
func (s *server) submitPut(c *call) error {
	id, err := pathExecutionID(c.r)
	if err != nil {
		return err
	}
	if !id.IsTopLevel() {
		return badRequest(msgMustBeTopLevel)
	}
	return s.submit(c, &id)
}

func (s *server) submit(c *call, pathID *core.ExecutionId) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	follow, err := q.boolean("follow", false)
	if err != nil {
		return err
	}
	var body submitBody
	if err := c.decodeBody(&body); err != nil {
		return err
	}
	if body.ComponentType != nil && !body.ComponentType.Valid() {
		return unprocessable(errors.New("unknown component type"))
	}
	var id core.ExecutionId
	if pathID != nil {
		id = *pathID
	} else if id, err = s.newExecutionID(); err != nil {
		return err
	}
	setExecutionID(c.r, id)
	now := s.now()
	target, err := s.resolveSubmit(c.ctx(), &body, now)
	if err != nil {
		return err
	}
	req := core.CreateRequest{
		CreatedAt: now, ExecutionID: id, FFQN: target.ffqn, Params: target.params,
		ScheduledAt: target.scheduledAt, ComponentID: target.component, DeploymentID: target.deployment,
		Metadata: tracemeta.ForRequest(c.ctx(), c.r), Paused: body.Paused,
	}
	status := http.StatusCreated
	if _, err := s.db.Create(c.ctx(), req); errors.Is(err, core.ErrConflict) {
		existing, err := s.db.GetCreateRequest(c.ctx(), id)
		if err != nil {
			return err
		}
		if !paramsEqual(existing.Params, req.Params) {
			return httpErr(http.StatusConflict, msgSubmitConflict)
		}
		status = http.StatusOK
	} else if err != nil {
		return err
	}
	if !follow {
		return c.ok(status, id.String())
	}
	rv, done, err := s.waitFinished(c.ctx(), id)
	if err != nil {
		return err
	}
	if !done {
		c.w.Header().Set("Location", "/v1/executions/"+url.PathEscape(id.String()))
		c.w.Header().Set("Retry-After", "0")
		return c.ok(http.StatusAccepted, id.String())
	}
	return c.json(status, retVal{rv})
}

// submitTarget is what submit resolved from the body and the current deployment.
type submitTarget struct {
	ffqn        core.FunctionFqn
	params      core.Params
	scheduledAt core.Timestamp
	component   core.ComponentId
	deployment  core.DeploymentId
}

// resolveSubmit finds the component exporting the ffqn in the current
// deployment, or falls back to unmanaged mode when storage has none.
func (s *server) resolveSubmit(ctx context.Context, body *submitBody, now core.Timestamp) (submitTarget, error) {
	t := submitTarget{ffqn: *body.FFQN, params: body.Params, scheduledAt: now}
	dep, err := s.db.GetCurrentDeployment(ctx)
	switch {
	case errors.Is(err, core.ErrNotFound), errors.Is(err, core.ErrNotImplemented):
		// Unmanaged mode: no deployment in storage (a fresh dev store).
		t.component = core.ComponentId{ComponentType: core.ComponentTypeActivity}
		if body.ComponentType != nil {
			t.component.ComponentType = *body.ComponentType
		}
		return t, nil
	case err != nil:
		return t, err
	}
	comps, err := s.db.ListDeploymentComponents(ctx, dep.DeploymentID)
	if err != nil {
		return t, err
	}
	comp, fn, ok := findExport(comps, t.ffqn)
	if !ok || !fn.Submittable {
		return t, httpErr(http.StatusNotFound, msgFFQNNotFound)
	}
	if fn.Extension != nil && *fn.Extension == "schedule" {
		orig, ok := scheduleTarget(t.ffqn)
		if !ok {
			return t, httpErr(http.StatusNotFound, msgFFQNNotFound)
		}
		if len(t.params) == 0 {
			return t, badRequest("argument `params` invalid - missing the `schedule-at` parameter")
		}
		at, err := parseScheduleAt(t.params[0], now)
		if err != nil {
			return t, badRequest("argument `params` invalid - %s", err.Error())
		}
		t.ffqn, t.params, t.scheduledAt = orig, t.params[1:], at
		if c, _, ok := findExport(comps, orig); ok {
			comp = c
		}
	}
	t.component, t.deployment = comp.ComponentID, dep.DeploymentID
	return t, nil
}

func findExport(comps []core.DeploymentComponentDetail, ffqn core.FunctionFqn) (core.DeploymentComponentDetail, core.PersistedFunctionMetadata, bool) {
	for _, c := range comps {
		for _, e := range c.Exports {
			if e.FFQN == ffqn {
				return c, e, true
			}
		}
	}
	return core.DeploymentComponentDetail{}, core.PersistedFunctionMetadata{}, false
}

// Suffixes of Obelisk's `-schedule` extension functions.
const (
	schedulePkgSuffix = "-obelisk-schedule"
	scheduleFnSuffix  = "-schedule"
)

// scheduleTarget maps `ns:pkg-obelisk-schedule/ifc.fn-schedule` to `ns:pkg/ifc.fn`.
func scheduleTarget(f core.FunctionFqn) (core.FunctionFqn, bool) {
	ns, rest, _ := strings.Cut(f.IfcFqn, ":")
	pkg, ifc, _ := strings.Cut(rest, "/")
	if !strings.HasSuffix(pkg, schedulePkgSuffix) || !strings.HasSuffix(f.FunctionName, scheduleFnSuffix) {
		return core.FunctionFqn{}, false
	}
	orig := ns + ":" + strings.TrimSuffix(pkg, schedulePkgSuffix) + "/" + ifc + "." + strings.TrimSuffix(f.FunctionName, scheduleFnSuffix)
	out, err := core.ParseFunctionFqn(orig)
	return out, err == nil
}

// parseScheduleAt reads the WIT `schedule-at` value as JSON: "now",
// {"at":{"seconds":u64,"nanoseconds":u32}} or {"in":{"<unit>":n}} with unit
// milliseconds, seconds, minutes, hours or days.
func parseScheduleAt(raw json.RawMessage, now core.Timestamp) (core.Timestamp, error) {
	var tag string
	if json.Unmarshal(raw, &tag) == nil {
		if tag == "now" {
			return now, nil
		}
		return core.Timestamp{}, fmt.Errorf("unknown schedule-at variant %q", tag)
	}
	var v struct {
		At *struct {
			Seconds     *uint64 `json:"seconds"`
			Nanoseconds uint32  `json:"nanoseconds"`
		} `json:"at"`
		In map[string]uint64 `json:"in"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil || (v.At == nil) == (v.In == nil) {
		return core.Timestamp{}, errors.New("invalid schedule-at value")
	}
	if v.At != nil {
		if v.At.Seconds == nil || *v.At.Seconds > 253402300799 || v.At.Nanoseconds >= 1e9 {
			return core.Timestamp{}, errors.New("invalid schedule-at datetime")
		}
		return core.TS(time.Unix(int64(*v.At.Seconds), int64(v.At.Nanoseconds))), nil
	}
	if len(v.In) != 1 {
		return core.Timestamp{}, errors.New("invalid schedule-at duration")
	}
	units := map[string]time.Duration{"milliseconds": time.Millisecond, "seconds": time.Second,
		"minutes": time.Minute, "hours": time.Hour, "days": 24 * time.Hour}
	for unit, n := range v.In {
		u, ok := units[unit]
		if !ok || n > uint64((1<<63-1)/u) {
			return core.Timestamp{}, errors.New("invalid schedule-at duration")
		}
		return core.ScheduleAt{Kind: "in", In: core.DurationOf(time.Duration(n) * u)}.AsTimestamp(now)
	}
	panic("unreachable")
}

// paramsEqual compares params structurally (object key order ignored,
// number literals compared as written), like serde_json::Value equality.
func paramsEqual(a, b core.Params) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, errX := decodeAny(a[i])
		y, errY := decodeAny(b[i])
		if errX != nil || errY != nil || !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

func decodeAny(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
