package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/stela-dev/stela/core"
)

// DefaultBuildID is the build id of a worker whose Options.BuildID is
// empty: "git:<revision>" when the binary was built from a clean VCS
// checkout (debug.ReadBuildInfo's vcs.revision, vcs.modified false), else
// "exe:<sha256 of the executable, 16 bytes>", else "unknown". It is
// computed once per process.
func DefaultBuildID() string {
	buildIDOnce.Do(func() { buildID = deriveBuildID() })
	return buildID
}

var (
	buildIDOnce sync.Once
	buildID     string
)

func deriveBuildID() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		modified := true
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" && !modified {
			return "git:" + rev
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return "unknown"
	}
	f, err := os.Open(exe)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unknown"
	}
	return "exe:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// BuildID returns the worker's build id (Options.BuildID or DefaultBuildID).
func (w *Worker) BuildID() string { return w.opts.BuildID }

// DeploymentID returns the deployment the worker records in its Locked
// events and created executions: Options.DeploymentID, else the one it
// recorded itself as when it started (the zero id before, or when the
// store could not record it).
func (w *Worker) DeploymentID() core.DeploymentId { return w.deploymentID() }

func (w *Worker) deploymentID() core.DeploymentId {
	if !w.opts.DeploymentID.IsZero() {
		return w.opts.DeploymentID
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.deployment
}

// ComponentDigests returns the component digest of each registered
// function (its lock group's: see Options.BuildID), as recorded in the
// worker's deployment and Locked events; the digests an upgrade moves
// executions to (`stela execution upgrade --to`).
func (w *Worker) ComponentDigests() map[string]core.ComponentDigest {
	gs := w.groups()
	out := map[string]core.ComponentDigest{}
	for _, g := range gs {
		for _, f := range g.ffqns {
			out[f.String()] = g.component.ComponentDigest
		}
	}
	return out
}

// ownCallee is the component of a registered function for the executions
// this worker creates of it: its lock group's, digest included (a pinned
// worker of the same build then runs them).
func (w *Worker) ownCallee(fn *function) callee {
	w.mu.Lock()
	comp, ok := w.own[fn.ffqn]
	w.mu.Unlock()
	if !ok { // before the worker started: the groups it will lock with
		for _, g := range w.groups() {
			if slices.Contains(g.ffqns, fn.ffqn) {
				comp, ok = g.component, true
			}
		}
	}
	if !ok {
		comp = core.ComponentId{ComponentType: fn.kind, Name: w.opts.Name}
	}
	return callee{component: comp, deployment: w.deploymentID()}
}

// deploy remembers the components of gs and records them once as the
// worker's deployment (core.RegisterWorkerDeployment through the Conn),
// unless Options.DeploymentID is set. A store that cannot record it is
// logged, and the worker runs on with the zero deployment id (it tries
// again at the next Run).
func (w *Worker) deploy(gs []*lockGroup) {
	own := map[core.FunctionFqn]core.ComponentId{}
	for _, g := range gs {
		for _, f := range g.ffqns {
			own[f] = g.component
		}
	}
	w.mu.Lock()
	w.own = own
	done := w.registered || !w.opts.DeploymentID.IsZero()
	w.mu.Unlock()
	if done {
		return
	}
	wd := w.workerDeployment(gs)
	ctx, cancel := w.ioContext()
	defer cancel()
	id, err := w.conn.RegisterDeployment(ctx, wd)
	if err != nil {
		w.log.Warn("cannot record the worker's deployment; running without one", "build_id", w.opts.BuildID, "err", err)
		return
	}
	w.log.Debug("deployment recorded", "deployment_id", id.String(), "build_id", w.opts.BuildID)
	w.mu.Lock()
	w.deployment, w.registered = id, true
	w.mu.Unlock()
}

// workerDeployment describes gs as a deployment: one component per lock
// group, named <Name>-<type> (-<n> for a further group of the same type).
func (w *Worker) workerDeployment(gs []*lockGroup) core.WorkerDeployment {
	wd := core.WorkerDeployment{BuildID: w.opts.BuildID,
		Description: fmt.Sprintf("SDK worker %q, build %s", w.opts.Name, w.opts.BuildID)}
	seen := map[core.ComponentType]int{}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, g := range gs {
		t := g.component.ComponentType
		seen[t]++
		name := w.opts.Name + "-" + string(t)
		if n := seen[t]; n > 1 {
			name += fmt.Sprintf("-%d", n)
		}
		c := core.WorkerComponent{Name: name, Type: t, Digest: g.component.ComponentDigest}
		for _, f := range g.ffqns {
			c.Exports = append(c.Exports, functionMetadata(w.funcs[f]))
		}
		c.Wit = generateWit(c.Exports)
		wd.Components = append(wd.Components, c)
	}
	return wd
}

var unitType = reflect.TypeFor[Unit]()

// functionMetadata is a registered function's exported metadata: one
// parameter "params" of P's WIT type (none for Unit), R's WIT type as the
// result (empty for Unit).
func functionMetadata(f *function) core.PersistedFunctionMetadata {
	m := core.PersistedFunctionMetadata{FFQN: f.ffqn, ParameterTypes: []core.PersistedParameterType{}, Submittable: true}
	if f.param != nil && f.param != unitType {
		m.ParameterTypes = append(m.ParameterTypes, core.PersistedParameterType{Name: "params", WitType: witType(f.param)})
	}
	if f.result != nil && f.result != unitType {
		m.ReturnType = witType(f.result)
	}
	return m
}

// generateWit renders exports as WIT: one interface per interface name,
// grouped by package, functions in ffqn order. Stela never interprets it;
// the console shows it.
func generateWit(exports []core.PersistedFunctionMetadata) string {
	byIfc := map[string][]core.PersistedFunctionMetadata{}
	for _, e := range exports {
		byIfc[e.FFQN.IfcFqn] = append(byIfc[e.FFQN.IfcFqn], e)
	}
	ifcs := make([]string, 0, len(byIfc))
	for k := range byIfc {
		ifcs = append(ifcs, k)
	}
	slices.Sort(ifcs)
	var b strings.Builder
	b.WriteString("// Generated by the Stela Go SDK from the registered functions' Go types.\n")
	lastPkg := ""
	for _, ifc := range ifcs {
		pkg, name, ok := strings.Cut(ifc, "/")
		if !ok {
			pkg, name = "stela:worker", ifc
		}
		if pkg != lastPkg {
			fmt.Fprintf(&b, "\npackage %s;\n", pkg)
			lastPkg = pkg
		}
		fmt.Fprintf(&b, "\ninterface %s {\n", name)
		// Sorted through their names: a slices.SortFunc over the metadata
		// struct would link a sort instantiation of its own (≈15 kB).
		byName := map[string]core.PersistedFunctionMetadata{}
		var names []string
		for _, f := range byIfc[ifc] {
			byName[f.FFQN.FunctionName] = f
			names = append(names, f.FFQN.FunctionName)
		}
		slices.Sort(names)
		for _, name := range names {
			f := byName[name]
			params := make([]string, len(f.ParameterTypes))
			for i, p := range f.ParameterTypes {
				params[i] = p.Name + ": " + p.WitType
			}
			fmt.Fprintf(&b, "    %s: func(%s)", f.FFQN.FunctionName, strings.Join(params, ", "))
			if f.ReturnType != "" {
				fmt.Fprintf(&b, " -> %s", f.ReturnType)
			}
			b.WriteString(";\n")
		}
		b.WriteString("}\n")
	}
	return b.String()
}
