package determinism

import (
	"go/types"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// load type-checks the SDK packages as seen from dir: the real ones from the
// repository, the stub ones from testdata/shop.
func load(t *testing.T, dir string) map[string]*types.Package {
	t.Helper()
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedTypes, Dir: dir},
		workerPkg, clientPkg, corePkg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*types.Package{}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Fatalf("%s: %v", p.PkgPath, e)
		}
		out[p.PkgPath] = p.Types
	}
	return out
}

// typeString renders t with package paths; a signature without its
// parameters' names (only their types must agree).
func typeString(t types.Type) string {
	qual := func(p *types.Package) string { return p.Path() }
	sig, ok := t.(*types.Signature)
	if !ok {
		return types.TypeString(t, qual)
	}
	tuple := func(vs *types.Tuple, variadic bool) string {
		var parts []string
		for i := range vs.Len() {
			s := types.TypeString(vs.At(i).Type(), qual)
			if variadic && i == vs.Len()-1 {
				s = "..." + strings.TrimPrefix(s, "[]")
			}
			parts = append(parts, s)
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	var tparams []string
	for tp := range sig.TypeParams().TypeParams() {
		tparams = append(tparams, tp.Obj().Name()+" "+types.TypeString(tp.Constraint(), qual))
	}
	return "func[" + strings.Join(tparams, ", ") + "]" + tuple(sig.Params(), sig.Variadic()) + tuple(sig.Results(), false)
}

// TestStubMatchesTheSDK checks that every name of the SDK stub the tests
// run against (testdata/stela) exists in the real SDK with the same
// signature, so that the tests exercise the API users call.
func TestStubMatchesTheSDK(t *testing.T) {
	real, stub := load(t, "."), load(t, "testdata/shop")
	for path, sp := range stub {
		rp := real[path]
		if rp == nil {
			t.Fatalf("%s: not in the real SDK", path)
		}
		for _, name := range sp.Scope().Names() {
			so, ro := sp.Scope().Lookup(name), rp.Scope().Lookup(name)
			if !so.Exported() {
				continue
			}
			if ro == nil {
				t.Errorf("%s.%s: not in the real SDK", path, name)
				continue
			}
			switch so := so.(type) {
			case *types.Func:
				if got, want := typeString(so.Type()), typeString(ro.Type()); got != want {
					t.Errorf("%s.%s: stub %s, real %s", path, name, got, want)
				}
			case *types.TypeName:
				if so.IsAlias() {
					if got, want := typeString(types.Unalias(so.Type())), typeString(types.Unalias(ro.Type())); got != want {
						t.Errorf("%s.%s: stub alias of %s, real %s", path, name, got, want)
					}
					continue
				}
				ms := types.NewMethodSet(types.NewPointer(so.Type()))
				for i := range ms.Len() {
					m := ms.At(i).Obj()
					if !m.Exported() {
						continue
					}
					rm, _, _ := types.LookupFieldOrMethod(ro.Type(), true, rp, m.Name())
					if rm == nil {
						t.Errorf("%s.%s.%s: not in the real SDK", path, name, m.Name())
					} else if got, want := typeString(m.Type()), typeString(rm.Type()); got != want {
						t.Errorf("%s.%s.%s: stub %s, real %s", path, name, m.Name(), got, want)
					}
				}
				if st, ok := so.Type().Underlying().(*types.Struct); ok && so.Pkg().Path() != corePkg {
					for f := range st.Fields() {
						if !f.Exported() {
							continue
						}
						rf, _, _ := types.LookupFieldOrMethod(ro.Type(), true, rp, f.Name())
						if rf == nil || typeString(rf.Type()) != typeString(f.Type()) {
							t.Errorf("%s.%s.%s: stub field %s, real %v", path, name, f.Name(), typeString(f.Type()), rf)
						}
					}
				}
			}
		}
	}
}

// TestTablesNameTheSDK checks the analyzer's tables against the real SDK:
// the workflow context types, the registration functions (with the
// workflow or activity function and the ffqn where the table says) and
// the activity-only APIs exist.
func TestTablesNameTheSDK(t *testing.T) {
	real := load(t, ".")
	lookup := func(pkg, recv, name string) types.Object {
		p := real[pkg]
		if p == nil {
			t.Fatalf("package %s not loaded", pkg)
		}
		if recv == "" {
			return p.Scope().Lookup(name)
		}
		tn, _ := p.Scope().Lookup(recv).(*types.TypeName)
		if tn == nil {
			return nil
		}
		obj, _, _ := types.LookupFieldOrMethod(tn.Type(), true, p, name)
		return obj
	}
	for _, c := range workflowContexts {
		if _, ok := lookup(c.pkg, "", c.name).(*types.TypeName); !ok {
			t.Errorf("workflow context %s.%s: no such type", c.pkg, c.name)
		}
	}
	for _, r := range registrations {
		fn, ok := lookup(r.pkg, r.recv, r.name).(*types.Func)
		if !ok {
			t.Errorf("registration %s.%s: no such function", r.pkg, r.name)
			continue
		}
		params := fn.Signature().Params()
		if r.fn >= params.Len() {
			t.Errorf("registration %s: no argument %d", r.name, r.fn)
			continue
		}
		sig, ok := params.At(r.fn).Type().Underlying().(*types.Signature)
		if !ok {
			t.Errorf("registration %s: argument %d is not a function", r.name, r.fn)
			continue
		}
		if got := takesWorkflowContext(sig); got != r.workflow {
			t.Errorf("registration %s: the registered function takes a workflow context: %v, the table says workflow: %v", r.name, got, r.workflow)
		}
		if r.ffqn >= 0 && (r.ffqn >= params.Len() || typeString(params.At(r.ffqn).Type()) != "string") {
			t.Errorf("registration %s: argument %d is not the ffqn string", r.name, r.ffqn)
		}
	}
	for _, a := range apiRules {
		if real[a.pkg] == nil {
			continue // the standard library
		}
		recvs := a.recvs
		if recvs == nil {
			recvs = []string{""}
		}
		for _, recv := range recvs {
			for _, name := range a.names {
				if recv != "*" && lookup(a.pkg, recv, name) == nil {
					t.Errorf("activity-only API %s.%s.%s: not in the SDK", a.pkg, recv, name)
				}
			}
		}
	}
}
