package core

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// WorkerDeployment is what an SDK worker records of itself when it starts
// (Stela extension, docs/http-api.md "POST /v1/deployments"): its build and
// the components it serves, each a lock group of the worker.
type WorkerDeployment struct {
	// BuildID identifies the worker's code (worker.Options.BuildID).
	BuildID string `json:"build_id"`
	// Description is recorded as the deployment's description.
	Description string `json:"description"`
	// Components are the worker's components; at least one.
	Components []WorkerComponent `json:"components"`
}

// WorkerComponent is one component of a WorkerDeployment.
type WorkerComponent struct {
	// Name is the component's name in the deployment.
	Name   string          `json:"name"`
	Type   ComponentType   `json:"component_type"`
	Digest ComponentDigest `json:"component_digest"`
	// Exports are the functions it serves (ffqn, parameter and result
	// types), Submittable.
	Exports []PersistedFunctionMetadata `json:"exports"`
	// Wit is the WIT text generated from the Go types.
	Wit string `json:"wit"`
}

// Validate checks a WorkerDeployment received from a worker.
func (d WorkerDeployment) Validate() error {
	if len(d.Components) == 0 {
		return invalidf("components: at least one component is required")
	}
	if len(d.Components) > 64 {
		return invalidf("components: at most 64 components")
	}
	if len(d.BuildID) > 256 || len(d.Description) > 1024 {
		return invalidf("build_id or description too long")
	}
	names := map[string]bool{}
	for i, c := range d.Components {
		switch {
		case c.Name == "" || len(c.Name) > 128:
			return invalidf("components[%d].name: 1 to 128 bytes", i)
		case names[c.Name]:
			return invalidf("components[%d].name: %q listed twice", i, c.Name)
		case c.Type != ComponentTypeActivity && c.Type != ComponentTypeWorkflow:
			return invalidf("components[%d].component_type: activity or workflow", i)
		case c.Digest.IsZero():
			return invalidf("components[%d].component_digest: required", i)
		case len(c.Exports) == 0:
			return invalidf("components[%d].exports: at least one function", i)
		case len(c.Wit) > 256<<10:
			return invalidf("components[%d].wit: too long", i)
		}
		names[c.Name] = true
	}
	return nil
}

// IsZero reports whether d is the zero digest.
func (d ComponentDigest) IsZero() bool { return d.Digest == Digest{} }

// maxRegisterAttempts bounds the retries of RegisterWorkerDeployment when
// concurrent registrations activate deployments between its reads.
const maxRegisterAttempts = 5

// RegisterWorkerDeployment records wd in ds idempotently and returns the
// deployment the worker belongs to. A deployment is the whole application:
// the new one holds wd's components and the components of the current
// deployment that export none of wd's functions (another worker's), so
// workers of different components started one after the other make one
// deployment together, and a new build of a component supersedes its old
// build. Its digest is the sha256 of its rendered text (deployment_toml),
// so the same set of components is one deployment:
//
//   - the current deployment already has wd's components: it is returned,
//     nothing is written;
//   - a deployment with the same components exists and was active before
//     (an older build restarted): it is returned, not activated (the
//     newest build stays current; `PUT /v1/deployments/{id}/switch` rolls
//     back);
//   - otherwise it is inserted (newID) unless it exists, and activated.
//
// Registrations racing each other converge: after activating, the current
// deployment is read again and merged again when another registration
// replaced it.
func RegisterWorkerDeployment(ctx context.Context, ds DeploymentStore, wd WorkerDeployment, now Timestamp, newID func() (DeploymentId, error)) (DeploymentId, error) {
	if err := wd.Validate(); err != nil {
		return DeploymentId{}, err
	}
	for range maxRegisterAttempts {
		var current []DeploymentComponentDetail
		cur, err := ds.GetCurrentDeployment(ctx)
		found := err == nil
		switch {
		case found:
			if current, err = ds.ListDeploymentComponents(ctx, cur.DeploymentID); err != nil {
				return DeploymentId{}, err
			}
			if hasComponents(current, wd.Components) {
				return cur.DeploymentID, nil
			}
		case !errors.Is(err, ErrNotFound):
			return DeploymentId{}, err
		}
		comps := mergeComponents(current, wd.Components)
		text := renderWorkerDeployment(comps)
		digest := ContentDigest{Digest: sha256.Sum256([]byte(text))}
		existing, ok, err := findDeploymentByDigest(ctx, ds, digest)
		if err != nil {
			return DeploymentId{}, err
		}
		var id DeploymentId
		switch {
		case ok && existing.LastActiveAt != nil && found:
			return existing.DeploymentID, nil
		case ok:
			id = existing.DeploymentID
		default:
			if id, err = newID(); err != nil {
				return DeploymentId{}, err
			}
			desc := wd.Description
			rec := DeploymentRecord{DeploymentID: id, Description: &desc, Digest: digest, CreatedAt: now,
				Status: DeploymentInactive, DeploymentToml: text}
			var metadata []ComponentMetadataRecord
			var records []DeploymentComponentRecord
			for _, c := range comps {
				records = append(records, DeploymentComponentRecord{DeploymentID: id, ComponentName: c.Name,
					ComponentDigest: c.Digest, ComponentType: c.Type})
				if c.fresh {
					metadata = append(metadata, ComponentMetadataRecord{ComponentDigest: c.Digest, Exports: c.Exports,
						Imports: []PersistedFunctionMetadata{}, Wit: c.Wit, WitOrigin: WitOriginSynthesized})
				}
			}
			if err := ds.InsertDeploymentWithComponents(ctx, rec, metadata, records, nil); err != nil && !errors.Is(err, ErrConflict) {
				return DeploymentId{}, err
			}
		}
		if err := ds.ActivateDeployment(ctx, id, now); err != nil {
			return DeploymentId{}, err
		}
	}
	return DeploymentId{}, fmt.Errorf("register worker deployment: concurrent registrations did not settle after %d attempts: %w", maxRegisterAttempts, ErrConflict)
}

// hasComponents reports whether current has every component of mine (by
// type and digest).
func hasComponents(current []DeploymentComponentDetail, mine []WorkerComponent) bool {
	for _, m := range mine {
		if !slices.ContainsFunc(current, func(c DeploymentComponentDetail) bool {
			return c.ComponentID.ComponentDigest == m.Digest && c.ComponentID.ComponentType == m.Type
		}) {
			return false
		}
	}
	return true
}

// mergedComponent is a component of the deployment being registered;
// fresh ones are the worker's (their metadata is written).
type mergedComponent struct {
	WorkerComponent
	fresh bool
}

// mergeComponents returns mine plus the components of current that export
// none of mine's functions, by name. A kept component whose name is one of
// mine's keeps its name; mine then takes a digest suffix.
func mergeComponents(current []DeploymentComponentDetail, mine []WorkerComponent) []mergedComponent {
	served := map[FunctionFqn]bool{}
	for _, m := range mine {
		for _, e := range m.Exports {
			served[e.FFQN] = true
		}
	}
	var out []mergedComponent
	taken := map[string]bool{}
	for _, c := range current {
		if slices.ContainsFunc(c.Exports, func(e PersistedFunctionMetadata) bool { return served[e.FFQN] }) {
			continue
		}
		out = append(out, mergedComponent{WorkerComponent: WorkerComponent{Name: c.ComponentID.Name,
			Type: c.ComponentID.ComponentType, Digest: c.ComponentID.ComponentDigest, Exports: c.Exports}})
		taken[c.ComponentID.Name] = true
	}
	for _, m := range mine {
		if taken[m.Name] {
			m.Name += "-" + m.Digest.String()[len("sha256:"):][:12]
		}
		out = append(out, mergedComponent{WorkerComponent: m, fresh: true})
	}
	slices.SortFunc(out, func(a, b mergedComponent) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// renderWorkerDeployment is a worker deployment's deployment_toml: a TOML
// listing of its components, in name order (its sha256 is the
// deployment's digest).
func renderWorkerDeployment(comps []mergedComponent) string {
	var b strings.Builder
	b.WriteString("# Stela SDK worker deployment\n")
	for _, c := range comps {
		fmt.Fprintf(&b, "\n[[%s]]\nname = %q\ndigest = %q\nexports = [", c.Type, c.Name, c.Digest.String())
		ffqns := make([]string, len(c.Exports))
		for i, e := range c.Exports {
			ffqns[i] = fmt.Sprintf("%q", e.FFQN.String())
		}
		slices.Sort(ffqns)
		b.WriteString(strings.Join(ffqns, ", "))
		b.WriteString("]\n")
	}
	return b.String()
}

// findDeploymentByDigest scans the deployments, newest first, for one of
// digest (the oldest such, when racing registrations inserted several).
func findDeploymentByDigest(ctx context.Context, ds DeploymentStore, digest ContentDigest) (DeploymentRecord, bool, error) {
	var cursor *DeploymentId
	var match DeploymentRecord
	found := false
	for {
		page, err := ds.ListDeployments(ctx, Pagination[*DeploymentId]{Direction: OlderThan, Length: 100, Cursor: cursor})
		if err != nil {
			return DeploymentRecord{}, false, err
		}
		for _, d := range page {
			if d.Digest == digest {
				match, found = d, true
			}
		}
		if len(page) < 100 {
			return match, found, nil
		}
		last := page[len(page)-1].DeploymentID
		cursor = &last
	}
}
