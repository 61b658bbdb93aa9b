package httpapi

import (
	"errors"
	"net/http"
	"sort"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// GET /v1/deployments
func (s *server) listDeployments(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var cursor *core.DeploymentId
	if q.has("cursor_from") {
		d, err := core.ParseDeploymentId(q.str("cursor_from"))
		if err != nil {
			return queryErr("cursor_from", "expected Dep_<ULID>")
		}
		cursor = &d
	}
	length, err := q.length(wire.MaxPageLength)
	if err != nil {
		return err
	}
	including, err := q.boolean("including_cursor", false)
	if err != nil {
		return err
	}
	derived, err := q.boolean("include_derived", false)
	if err != nil {
		return err
	}
	summary, err := q.boolean("include_component_summary", false)
	if err != nil {
		return err
	}
	states, err := s.db.ListDeploymentStates(c.ctx(), s.now(), core.Pagination[*core.DeploymentId]{
		Direction: core.OlderThan, Length: length, Cursor: cursor, IncludingCursor: including},
		false, core.DeploymentExecutionCounts{IncludeDerived: derived})
	if err != nil {
		return err
	}
	out := make([]wire.DeploymentStateJSON, 0, len(states))
	for _, st := range states {
		item := wire.DeploymentStateJSON{
			DeploymentID: st.DeploymentID, Description: st.Description, Digest: st.Digest, Status: st.Status,
			CreatedAt: st.CreatedAt, LastActiveAt: st.LastActiveAt, Locked: st.Locked, Pending: st.Pending,
			Scheduled: st.Scheduled, Blocked: st.Blocked, Paused: st.Paused, Cancelling: st.Cancelling,
			FinishedOk: st.FinishedOk, FinishedError: st.FinishedError, FinishedExecutionFailure: st.FinishedExecutionFailure,
		}
		if summary {
			comps, err := s.db.ListDeploymentComponents(c.ctx(), st.DeploymentID)
			if err != nil {
				return err
			}
			item.ComponentSummary = summarize(comps)
		}
		out = append(out, item)
	}
	return c.reply(http.StatusOK, out, func() string { return deploymentsText(out) })
}

func summarize(comps []core.DeploymentComponentDetail) *wire.ComponentSummaryJSON {
	counts := map[core.ComponentType]int{}
	for _, c := range comps {
		counts[c.ComponentID.ComponentType]++
	}
	out := &wire.ComponentSummaryJSON{Components: []wire.ComponentCountJSON{}}
	for t, n := range counts {
		out.Components = append(out.Components, wire.ComponentCountJSON{ComponentType: t, Count: n})
	}
	sort.Slice(out.Components, func(i, j int) bool { return out.Components[i].ComponentType < out.Components[j].ComponentType })
	return out
}

// GET /v1/deployments/{deployment_id}
func (s *server) getDeployment(c *call) error {
	id, err := pathDeploymentID(c.r)
	if err != nil {
		return err
	}
	q, err := c.query()
	if err != nil {
		return err
	}
	// include_generated_metadata is accepted for compatibility; the stored
	// TOML is always returned as stored.
	if _, err := q.optBool("include_generated_metadata"); err != nil {
		return err
	}
	d, err := s.db.GetDeployment(c.ctx(), id)
	if err != nil {
		return orMessage(err, core.ErrNotFound, http.StatusNotFound, "deployment not found")
	}
	out := wire.DeploymentJSON{
		DeploymentID: d.DeploymentID, Description: d.Description, Digest: d.Digest, Status: d.Status,
		CreatedAt: d.CreatedAt, LastActiveAt: d.LastActiveAt, DeploymentToml: d.DeploymentToml, Files: nonNil(d.Files),
	}
	return c.reply(http.StatusOK, out, func() string { return deploymentText(out) })
}

// GET /v1/deployment-id
func (s *server) getCurrentDeploymentID(c *call) error {
	d, err := s.db.GetCurrentDeployment(c.ctx())
	if err != nil {
		return orMessage(err, core.ErrNotFound, http.StatusNotFound, "no current deployment")
	}
	return c.reply(http.StatusOK, d.DeploymentID, d.DeploymentID.String)
}

// deploymentParam returns `deployment_id` from the query, else the current
// deployment; ok is false when neither exists.
func (s *server) deploymentParam(c *call, q query) (core.DeploymentId, bool, error) {
	if q.has("deployment_id") {
		d, err := core.ParseDeploymentId(q.str("deployment_id"))
		if err != nil {
			return d, false, queryErr("deployment_id", "expected Dep_<ULID>")
		}
		return d, true, nil
	}
	cur, err := s.db.GetCurrentDeployment(c.ctx())
	if errors.Is(err, core.ErrNotFound) {
		return core.DeploymentId{}, false, nil
	}
	if err != nil {
		return core.DeploymentId{}, false, err
	}
	return cur.DeploymentID, true, nil
}

// GET /v1/components
func (s *server) listComponents(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var typ *core.ComponentType
	if q.has("type") {
		t := core.ComponentType(q.str("type"))
		if !t.Valid() {
			return queryErr("type", "expected activity, activity_stub, workflow, webhook_endpoint or cron")
		}
		typ = &t
	}
	var digest *core.ComponentDigest
	if q.has("digest") {
		d, err := core.ParseComponentDigest(q.str("digest"))
		if err != nil {
			return queryErr("digest", "expected sha256:<64 hex digits>")
		}
		digest = &d
	}
	var ffqn *core.FunctionFqn
	if q.has("ffqn") {
		f, err := core.ParseFunctionFqn(q.str("ffqn"))
		if err != nil {
			return queryErr("ffqn", "invalid function name")
		}
		ffqn = &f
	}
	flags := map[string]bool{}
	for _, name := range []string{"exports", "imports", "extensions"} {
		if flags[name], err = q.boolean(name, false); err != nil {
			return err
		}
	}
	submittable, err := q.optBool("submittable")
	if err != nil {
		return err
	}
	dep, ok, err := s.deploymentParam(c, q)
	if err != nil {
		return err
	}
	var comps []core.DeploymentComponentDetail
	if ok {
		if comps, err = s.db.ListDeploymentComponents(c.ctx(), dep); err != nil {
			return err
		}
	}
	out := []wire.ComponentJSON{}
	for _, comp := range comps {
		id := comp.ComponentID
		switch {
		case typ != nil && id.ComponentType != *typ,
			q.has("name") && id.Name != q.str("name"),
			digest != nil && id.ComponentDigest != *digest:
			continue
		}
		if ffqn != nil {
			if _, _, found := findExport([]core.DeploymentComponentDetail{comp}, *ffqn); !found {
				continue
			}
		}
		item := wire.ComponentJSON{ComponentID: id, Files: nonNil(comp.Files)}
		if flags["exports"] {
			ex := functionsJSON(comp.Exports, flags["extensions"], submittable)
			item.Exports = &ex
		}
		if flags["imports"] {
			im := functionsJSON(comp.Imports, flags["extensions"], nil)
			item.Imports = &im
		}
		out = append(out, item)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].ComponentID, out[j].ComponentID
		if a.ComponentType != b.ComponentType {
			return a.ComponentType < b.ComponentType
		}
		return a.Name < b.Name
	})
	return c.reply(http.StatusOK, out, func() string { return componentsText(out) })
}

func functionsJSON(fns []core.PersistedFunctionMetadata, extensions bool, submittable *bool) []wire.FunctionJSON {
	out := []wire.FunctionJSON{}
	for _, f := range fns {
		if (f.Extension != nil && !extensions) || (submittable != nil && f.Submittable != *submittable) {
			continue
		}
		out = append(out, wire.FunctionJSON{FFQN: f.FFQN, ParameterTypes: nonNil(f.ParameterTypes),
			ReturnType: f.ReturnType, Extension: f.Extension, Submittable: f.Submittable})
	}
	return out
}

// GET /v1/components/{digest}/wit
func (s *server) getComponentWit(c *call) error {
	d, err := pathDigest(c.r)
	if err != nil {
		return err
	}
	q, err := c.query()
	if err != nil {
		return err
	}
	dep, ok, err := s.deploymentParam(c, q)
	if err != nil {
		return err
	}
	if !ok {
		return httpErr(http.StatusNotFound, "component not found")
	}
	wit, err := s.db.GetDeploymentComponentWit(c.ctx(), dep, core.ComponentDigest{Digest: d})
	if err != nil {
		return orMessage(err, core.ErrNotFound, http.StatusNotFound, "component not found")
	}
	return c.text(http.StatusOK, wit)
}

// GET /v1/files/{digest}
func (s *server) getFile(c *call) error {
	d, err := pathDigest(c.r)
	if err != nil {
		return err
	}
	if s.cas == nil {
		return core.ErrNotImplemented
	}
	b, err := s.cas.ReadBlob(c.ctx(), core.ContentDigest{Digest: d})
	if err != nil {
		return orMessage(err, core.ErrNotFound, http.StatusNotFound, "file not found")
	}
	c.w.Header().Set("Content-Type", contentTypeBytes)
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(b)
	return nil
}
