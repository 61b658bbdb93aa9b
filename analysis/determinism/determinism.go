package determinism

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/constant"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// Analyzer reports constructs that break the replay of Stela workflow code.
var Analyzer = &analysis.Analyzer{
	Name: "determinism",
	Doc: "report what breaks the deterministic replay of Stela workflows\n\n" +
		"Workflow code is every function registered with worker.Workflow and every function that takes a\n" +
		"*worker.Context, with everything they call in the same module. In it the analyzer reports the wall\n" +
		"clock and timers, math/rand and crypto/rand, go statements, select and channel operations, range over\n" +
		"maps, the environment and files, network and database calls, mutable package variables, sync\n" +
		"primitives and the SDK's activity-only APIs, each with the deterministic alternative. A line that was\n" +
		"reviewed carries `//stela:nondeterministic-ok <reason>` at its end or on the line above.",
	Run:       run,
	FactTypes: []analysis.Fact{new(summary)},
}

// OptOut is the comment that marks a reviewed line: at the end of the line
// or alone on the line above it, followed by the reason.
const OptOut = "//stela:nondeterministic-ok"

func run(pass *analysis.Pass) (any, error) {
	if isSDK(pass.Pkg.Path()) || isStd(pass) || isDependency(pass) {
		return nil, nil
	}
	c := &pkgAnalysis{
		pass:        pass,
		nodes:       map[ast.Node]*node{},
		byObj:       map[types.Object]*node{},
		optOut:      map[lineKey]bool{},
		register:    map[ast.Node]bool{},
		inSelect:    map[ast.Node]bool{},
		sorted:      map[*ast.RangeStmt]bool{},
		mutated:     map[*types.Var]token.Pos{},
		mutatesRecv: map[*types.Func]bool{},
		regNames:    map[*node]string{},
		module:      modulePath(pass),
	}
	c.scan()
	c.build()
	c.exportFacts()
	c.report()
	return nil, nil
}

// isStd reports whether the pass is over a package of the standard library.
func isStd(pass *analysis.Pass) bool {
	if pass.Module != nil || len(pass.Files) == 0 {
		return false
	}
	if root := build.Default.GOROOT; root != "" {
		name := pass.Fset.File(pass.Files[0].Pos()).Name()
		if rel, err := filepath.Rel(filepath.Join(root, "src"), name); err == nil && !strings.HasPrefix(rel, "..") {
			return true
		}
	}
	first, _, _ := strings.Cut(pass.Pkg.Path(), "/")
	return !strings.Contains(first, ".")
}

// isDependency reports whether the pass is over a package of a required
// module (it has a version; the main and workspace modules have none): its
// findings are not reported and its facts never reach the main module,
// which follows only its own packages.
func isDependency(pass *analysis.Pass) bool {
	return pass.Module != nil && !pass.Module.Main && pass.Module.Version != ""
}

// modulePath returns the path of the pass's module, "" if the driver does
// not say.
func modulePath(pass *analysis.Pass) string {
	if pass.Module != nil {
		return pass.Module.Path
	}
	return ""
}

// pkgAnalysis is the analysis of one package.
type pkgAnalysis struct {
	pass   *analysis.Pass
	module string
	// nodes are the package's function bodies and package variable
	// initializers, by *ast.FuncDecl, *ast.FuncLit and *ast.ValueSpec; byObj
	// the declared functions and variables among them.
	nodes map[ast.Node]*node
	byObj map[types.Object]*node
	order []*node // in source order
	// roots is the workflow code: registered workflows first, then the
	// functions that take a workflow context.
	roots    []*node
	regNames map[*node]string
	// optOut are the reviewed lines.
	optOut map[lineKey]bool
	// register are the functions registered in this package, as
	// workflows or activities: a registration is not a call, so the
	// registering code does not run them; inSelect are the channel
	// operations of select cases (reported as the select).
	register map[ast.Node]bool
	inSelect map[ast.Node]bool
	// sorted are the map ranges that only collect keys sorted afterwards.
	sorted map[*ast.RangeStmt]bool
	// mutated are the package variables of the module assigned in this
	// package after initialization, with the first such position.
	mutated map[*types.Var]token.Pos
	// mutatesRecv are the package's pointer methods that modify their receiver.
	mutatesRecv map[*types.Func]bool
}

// node is a function body or a package variable's initializer.
type node struct {
	name     string       // for chains: "helper", "T.method", "func literal (file.go:12)", "var cfg"
	obj      types.Object // the declared function or variable, nil for a literal
	pos      token.Pos
	body     ast.Node // what is walked
	isRoot   bool     // takes a workflow context
	findings []finding
	edges    []edge
}

type finding struct {
	pos  token.Pos
	rule *rule
	what string
}

// edge is a use of a function or variable: in this package (to) or in
// another package of the module (ext, its fact, named extName).
type edge struct {
	pos token.Pos
	to  *node
	ext *summary
}

type lineKey struct {
	file string
	line int
}

// --- scan: what the rest needs to know before walking ---------------------------------------

// scan finds the nodes, opt-outs, registrations, sorted map ranges and
// mutations of package variables.
func (c *pkgAnalysis) scan() {
	info := c.pass.TypesInfo
	for _, f := range c.pass.Files {
		c.scanOptOuts(f)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Body == nil {
					continue
				}
				obj, _ := info.Defs[d.Name].(*types.Func)
				if obj == nil {
					continue
				}
				n := c.newNode(d, d.Body, funcName(obj), obj)
				n.isRoot = takesWorkflowContext(obj.Signature())
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, s := range d.Specs {
					vs := s.(*ast.ValueSpec)
					if len(vs.Values) == 0 {
						continue
					}
					n := c.newNode(vs, vs, "var "+vs.Names[0].Name, nil)
					for _, id := range vs.Names {
						if v, ok := info.Defs[id].(*types.Var); ok {
							c.byObj[v] = n
							if n.obj == nil {
								n.obj = v
							}
						}
					}
				}
			}
		}
		ast.Inspect(f, func(x ast.Node) bool {
			switch x := x.(type) {
			case *ast.FuncLit:
				n := c.newNode(x, x.Body, "func literal ("+c.short(x.Pos())+")", nil)
				if sig, ok := info.TypeOf(x).(*types.Signature); ok {
					n.isRoot = takesWorkflowContext(sig)
				}
			case *ast.BlockStmt:
				c.scanSortedRanges(x.List)
			case *ast.CaseClause:
				c.scanSortedRanges(x.Body)
			case *ast.CommClause:
				c.scanSortedRanges(x.Body)
			}
			return true
		})
	}
	c.scanReceivers()
	for _, f := range c.pass.Files {
		c.scanMutations(f)
	}
	// Registrations, once every node exists.
	var registered []*node
	for _, f := range c.pass.Files {
		ast.Inspect(f, func(x ast.Node) bool {
			call, ok := x.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn, _ := typeutil.Callee(info, call).(*types.Func)
			if fn == nil {
				return true
			}
			r := registrationFor(fn.Origin())
			if r == nil || r.fn >= len(call.Args) {
				return true
			}
			arg := ast.Unparen(call.Args[r.fn])
			c.register[arg] = true
			if !r.workflow {
				return true
			}
			n := c.registered(arg)
			if n == nil {
				return true
			}
			name := "workflow registered at " + c.short(call.Pos())
			if r.ffqn >= 0 && r.ffqn < len(call.Args) {
				if tv, ok := info.Types[call.Args[r.ffqn]]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
					name = fmt.Sprintf("workflow %q", constant.StringVal(tv.Value))
				}
			}
			if n.obj != nil {
				name += " (" + n.name + ")"
			}
			if _, dup := c.regNames[n]; !dup {
				c.regNames[n] = name
				registered = append(registered, n)
			}
			return true
		})
	}
	c.roots = registered
	for _, n := range c.order {
		if n.isRoot && !slices.Contains(registered, n) {
			c.roots = append(c.roots, n)
		}
	}
}

func (c *pkgAnalysis) newNode(key, body ast.Node, name string, obj types.Object) *node {
	n := &node{name: name, obj: obj, pos: key.Pos(), body: body}
	c.nodes[key] = n
	if obj != nil {
		c.byObj[obj] = n
	}
	c.order = append(c.order, n)
	return n
}

// registered returns the node of a registered workflow function in this
// package, if it is statically known.
func (c *pkgAnalysis) registered(arg ast.Expr) *node {
	if lit, ok := arg.(*ast.FuncLit); ok {
		return c.nodes[lit]
	}
	var id *ast.Ident
	switch a := arg.(type) {
	case *ast.Ident:
		id = a
	case *ast.SelectorExpr:
		id = a.Sel
	case *ast.IndexExpr: // an explicit instantiation
		return c.registered(ast.Unparen(a.X))
	case *ast.IndexListExpr:
		return c.registered(ast.Unparen(a.X))
	}
	if id == nil {
		return nil
	}
	if fn, ok := c.pass.TypesInfo.Uses[id].(*types.Func); ok {
		return c.byObj[fn.Origin()]
	}
	return nil
}

// takesWorkflowContext reports whether a function with signature sig is
// workflow code: one of its parameters is a workflow context.
func takesWorkflowContext(sig *types.Signature) bool {
	for v := range sig.Params().Variables() {
		if isWorkflowContext(v.Type()) {
			return true
		}
	}
	return false
}

// scanOptOuts records the lines reviewed with an OptOut comment and reports
// the comments that give no reason.
func (c *pkgAnalysis) scanOptOuts(f *ast.File) {
	tf := c.pass.Fset.File(f.Pos())
	var src []byte
	for _, g := range f.Comments {
		for _, cm := range g.List {
			rest, ok := strings.CutPrefix(cm.Text, OptOut)
			if !ok || rest != "" && rest[0] != ' ' && rest[0] != '\t' {
				continue
			}
			if strings.TrimSpace(rest) == "" {
				c.pass.Report(analysis.Diagnostic{Pos: cm.Pos(), Category: ruleOptOut.name,
					Message: OptOut + " needs a reason: say why this line is safe on replay"})
				continue
			}
			p := tf.Position(cm.Pos())
			c.optOut[lineKey{p.Filename, p.Line}] = true
			if src == nil {
				src, _ = c.readFile(p.Filename)
			}
			// Alone on its line: it covers the next line too.
			if start := tf.Offset(tf.LineStart(p.Line)); src != nil && p.Offset <= len(src) &&
				len(bytes.TrimSpace(src[start:p.Offset])) == 0 {
				c.optOut[lineKey{p.Filename, p.Line + 1}] = true
			}
		}
	}
}

func (c *pkgAnalysis) readFile(name string) ([]byte, error) {
	if c.pass.ReadFile != nil {
		return c.pass.ReadFile(name)
	}
	return nil, fmt.Errorf("no ReadFile")
}

func (c *pkgAnalysis) reviewed(pos token.Pos) bool {
	p := c.pass.Fset.Position(pos)
	return c.optOut[lineKey{p.Filename, p.Line}]
}

// scanSortedRanges finds, in a statement list, the ranges over a map whose
// body only appends the key (or value) to a slice that a later statement of
// the list sorts: the classic sorted iteration, which is deterministic.
func (c *pkgAnalysis) scanSortedRanges(list []ast.Stmt) {
	for i, s := range list {
		r, ok := s.(*ast.RangeStmt)
		if !ok || len(r.Body.List) != 1 {
			continue
		}
		as, ok := r.Body.List[0].(*ast.AssignStmt)
		if !ok || as.Tok != token.ASSIGN || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
			continue
		}
		dst, ok := as.Lhs[0].(*ast.Ident)
		call, ok2 := ast.Unparen(as.Rhs[0]).(*ast.CallExpr)
		if !ok || !ok2 || len(call.Args) != 2 || !c.isBuiltin(call.Fun, "append") {
			continue
		}
		obj := c.pass.TypesInfo.Uses[dst]
		if first, ok := call.Args[0].(*ast.Ident); !ok || c.pass.TypesInfo.Uses[first] != obj {
			continue
		}
		elem, ok := call.Args[1].(*ast.Ident)
		if !ok || !(sameIdent(c.pass.TypesInfo, elem, r.Key) || sameIdent(c.pass.TypesInfo, elem, r.Value)) {
			continue
		}
		for _, later := range list[i+1:] {
			if c.sorts(later, obj) {
				c.sorted[r] = true
				break
			}
		}
	}
}

func sameIdent(info *types.Info, use *ast.Ident, def ast.Expr) bool {
	id, ok := def.(*ast.Ident)
	return ok && info.Uses[use] != nil && info.Uses[use] == info.ObjectOf(id)
}

// sortFuncs sort their first argument in place.
var sortFuncs = []string{"sort.Strings", "sort.Ints", "sort.Float64s", "sort.Slice", "sort.SliceStable",
	"sort.Sort", "sort.Stable", "slices.Sort", "slices.SortFunc", "slices.SortStableFunc"}

// sorts reports whether s is a call sorting the slice obj.
func (c *pkgAnalysis) sorts(s ast.Stmt, obj types.Object) bool {
	es, ok := s.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok || len(call.Args) == 0 {
		return false
	}
	fn, _ := typeutil.Callee(c.pass.TypesInfo, call).(*types.Func)
	if fn == nil || fn.Pkg() == nil || !slices.Contains(sortFuncs, fn.Pkg().Path()+"."+fn.Name()) {
		return false
	}
	arg := ast.Unparen(call.Args[0])
	if conv, ok := arg.(*ast.CallExpr); ok && len(conv.Args) == 1 { // sort.Sort(sort.StringSlice(s))
		arg = ast.Unparen(conv.Args[0])
	}
	id, ok := arg.(*ast.Ident)
	return ok && c.pass.TypesInfo.Uses[id] == obj
}

func (c *pkgAnalysis) isBuiltin(fun ast.Expr, name string) bool {
	id, ok := ast.Unparen(fun).(*ast.Ident)
	if !ok {
		return false
	}
	b, ok := c.pass.TypesInfo.Uses[id].(*types.Builtin)
	return ok && b.Name() == name
}

// scanMutations records the package variables of the module that this
// package assigns outside initialization (init functions and variable
// initializers; see mutations).
func (c *pkgAnalysis) scanMutations(f *ast.File) {
	visit := func(body ast.Node) {
		c.mutations(body, func(e ast.Expr, pos token.Pos) {
			if v := c.packageVar(c.rootObj(e)); v != nil {
				if _, seen := c.mutated[v]; !seen {
					c.mutated[v] = pos
				}
			}
		})
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			if fd.Body != nil && !(fd.Recv == nil && fd.Name.Name == "init") {
				visit(fd.Body)
			}
			continue
		}
		// Function literals in variable initializers run later.
		ast.Inspect(d, func(x ast.Node) bool {
			if lit, ok := x.(*ast.FuncLit); ok {
				visit(lit.Body)
				return false
			}
			return true
		})
	}
}

// scanReceivers finds the methods of the package that modify their
// (pointer) receiver, to a fixpoint over the methods calling each other.
func (c *pkgAnalysis) scanReceivers() {
	type method struct {
		fn   *types.Func
		recv types.Object
		body *ast.BlockStmt
	}
	var ms []method
	for _, f := range c.pass.Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || fd.Body == nil || len(fd.Recv.List) == 0 || len(fd.Recv.List[0].Names) == 0 {
				continue
			}
			fn, _ := c.pass.TypesInfo.Defs[fd.Name].(*types.Func)
			recv := c.pass.TypesInfo.Defs[fd.Recv.List[0].Names[0]]
			if fn == nil || recv == nil {
				continue
			}
			if _, ptr := types.Unalias(recv.Type()).(*types.Pointer); ptr {
				ms = append(ms, method{fn, recv, fd.Body})
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, m := range ms {
			if c.mutatesRecv[m.fn] {
				continue
			}
			c.mutations(m.body, func(e ast.Expr, _ token.Pos) {
				if c.rootObj(e) == m.recv && !c.mutatesRecv[m.fn] {
					c.mutatesRecv[m.fn] = true
					changed = true
				}
			})
		}
	}
}

// statefulTypes are the standard library's types whose pointer methods
// modify them (other packages' methods are assumed not to).
var statefulTypes = []string{"bytes.Buffer", "strings.Builder", "math/rand.Rand", "math/rand/v2.Rand",
	"math/rand/v2.PCG", "math/rand/v2.ChaCha8", "container/list.List", "container/ring.Ring",
	"bufio.Reader", "bufio.Writer", "bufio.Scanner", "bufio.ReadWriter"}

// modifiesReceiver reports whether the pointer method fn modifies its
// receiver: known for the package's own methods, by a fact for the module's
// other packages, by statefulTypes and the sync packages for the standard
// library.
func (c *pkgAnalysis) modifiesReceiver(fn *types.Func) bool {
	fn = fn.Origin()
	switch pkg := fn.Pkg(); {
	case pkg == nil:
		return false
	case pkg == c.pass.Pkg:
		return c.mutatesRecv[fn]
	case pkg.Path() == "sync" || pkg.Path() == "sync/atomic":
		return true
	case slices.Contains(statefulTypes, pkg.Path()+"."+recvName(fn)):
		return true
	case c.followable(pkg):
		var s summary
		return c.pass.ImportObjectFact(fn, &s) && s.ModifiesReceiver
	}
	return false
}

// mutations calls mark with every expression that body modifies:
// assignments, increments, range assignments, address-taking, delete,
// clear and copy, and the operands of pointer methods that modify their
// receiver.
func (c *pkgAnalysis) mutations(body ast.Node, mark func(e ast.Expr, pos token.Pos)) {
	info := c.pass.TypesInfo
	ast.Inspect(body, func(x ast.Node) bool {
		switch x := x.(type) {
		case *ast.AssignStmt:
			if x.Tok != token.DEFINE {
				for _, l := range x.Lhs {
					mark(l, l.Pos())
				}
			}
		case *ast.IncDecStmt:
			mark(x.X, x.X.Pos())
		case *ast.RangeStmt:
			if x.Tok == token.ASSIGN {
				for _, e := range []ast.Expr{x.Key, x.Value} {
					if e != nil {
						mark(e, e.Pos())
					}
				}
			}
		case *ast.UnaryExpr:
			if x.Op == token.AND {
				mark(x.X, x.Pos())
			}
		case *ast.CallExpr:
			if (c.isBuiltin(x.Fun, "delete") || c.isBuiltin(x.Fun, "clear") || c.isBuiltin(x.Fun, "copy")) && len(x.Args) > 0 {
				mark(x.Args[0], x.Args[0].Pos())
			}
		case *ast.SelectorExpr:
			if sel, ok := info.Selections[x]; ok && sel.Kind() == types.MethodVal {
				if fn, ok := sel.Obj().(*types.Func); ok {
					if _, ptrRecv := types.Unalias(fn.Signature().Recv().Type()).(*types.Pointer); ptrRecv && c.modifiesReceiver(fn) {
						mark(x.X, x.Pos())
					}
				}
			}
		}
		return true
	})
}

// rootObj returns the variable an lvalue expression (v, v.f, v[i], *v,
// pkg.V, …) is rooted at, if any.
func (c *pkgAnalysis) rootObj(e ast.Expr) types.Object {
	info := c.pass.TypesInfo
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			return info.Uses[x]
		case *ast.SelectorExpr:
			sel, ok := info.Selections[x]
			if !ok { // a qualified identifier
				return info.Uses[x.Sel]
			}
			if sel.Kind() != types.FieldVal {
				return nil
			}
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		default:
			return nil
		}
	}
}

// packageVar returns obj if it is a package variable of this package or of
// another package of the module.
func (c *pkgAnalysis) packageVar(obj types.Object) *types.Var {
	v, ok := obj.(*types.Var)
	if !ok || v.IsField() || v.Pkg() == nil || v.Parent() != v.Pkg().Scope() {
		return nil
	}
	if v.Pkg() != c.pass.Pkg && !c.followable(v.Pkg()) {
		return nil
	}
	return v
}

// followable reports whether pkg, another package, is in the module and so
// followed through facts.
func (c *pkgAnalysis) followable(pkg *types.Package) bool {
	if pkg == nil || isSDK(pkg.Path()) {
		return false
	}
	path := pkg.Path()
	if c.module != "" {
		return path == c.module || strings.HasPrefix(path, c.module+"/")
	}
	return repoRoot(path) == repoRoot(c.pass.Pkg.Path())
}

// repoRoot guesses a module's path from a package path when the driver
// gives no module: host/owner/repo, or the first element.
func repoRoot(path string) string {
	parts := strings.Split(path, "/")
	if strings.Contains(parts[0], ".") && len(parts) >= 3 {
		return strings.Join(parts[:3], "/")
	}
	return parts[0]
}

// --- build: the findings and edges of every node ----------------------------------------------

func (c *pkgAnalysis) build() {
	for _, n := range c.order {
		c.walk(n)
	}
}

func (c *pkgAnalysis) walk(n *node) {
	info := c.pass.TypesInfo
	ast.Inspect(n.body, func(x ast.Node) bool {
		if x == nil || c.register[x] {
			return false
		}
		switch x := x.(type) {
		case *ast.FuncLit:
			n.edges = append(n.edges, edge{pos: x.Pos(), to: c.nodes[x]})
			return false
		case *ast.GoStmt:
			c.find(n, x.Go, ruleGoroutine, "go statement")
		case *ast.SelectStmt:
			c.find(n, x.Select, ruleSelect, "select statement")
			for _, cc := range x.Body.List {
				if op := commOp(cc.(*ast.CommClause).Comm); op != nil {
					c.inSelect[op] = true
				}
			}
		case *ast.SendStmt:
			if !c.inSelect[x] {
				c.find(n, x.Arrow, ruleChannel, "channel send")
			}
		case *ast.UnaryExpr:
			if x.Op == token.ARROW && !c.inSelect[x] {
				c.find(n, x.OpPos, ruleChannel, "channel receive")
			}
		case *ast.RangeStmt:
			c.rangeStmt(n, x)
		case *ast.Ident:
			switch obj := info.Uses[x].(type) {
			case *types.Func:
				c.funcUse(n, x, obj.Origin())
			case *types.Var:
				c.varUse(n, x, obj)
			}
		}
		return true
	})
}

// commOp returns the channel operation of a select case.
func commOp(s ast.Stmt) ast.Node {
	switch s := s.(type) {
	case *ast.SendStmt:
		return s
	case *ast.ExprStmt:
		return ast.Unparen(s.X)
	case *ast.AssignStmt:
		if len(s.Rhs) == 1 {
			return ast.Unparen(s.Rhs[0])
		}
	}
	return nil
}

func (c *pkgAnalysis) find(n *node, pos token.Pos, r *rule, what string) {
	n.findings = append(n.findings, finding{pos: pos, rule: r, what: what})
}

func (c *pkgAnalysis) rangeStmt(n *node, r *ast.RangeStmt) {
	t := c.pass.TypesInfo.TypeOf(r.X)
	if t == nil {
		return
	}
	switch t.Underlying().(type) {
	case *types.Map:
		if !c.sorted[r] {
			c.find(n, r.X.Pos(), ruleMapRange, "range over map "+types.ExprString(r.X))
		}
	case *types.Chan:
		c.find(n, r.X.Pos(), ruleChannel, "range over channel "+types.ExprString(r.X))
	case *types.Signature: // an iterator: maps.Keys, maps.Values, maps.All yield in map order
		if call, ok := ast.Unparen(r.X).(*ast.CallExpr); ok {
			if fn, _ := typeutil.Callee(c.pass.TypesInfo, call).(*types.Func); fn != nil && fn.Pkg() != nil &&
				fn.Pkg().Path() == "maps" && slices.Contains([]string{"Keys", "Values", "All"}, fn.Name()) {
				c.find(n, r.X.Pos(), ruleMapRange, "range over "+types.ExprString(r.X))
			}
		}
	}
}

// funcUse handles a use (call or value) of a function or method.
func (c *pkgAnalysis) funcUse(n *node, id *ast.Ident, fn *types.Func) {
	switch {
	case fn.Pkg() == nil:
	case fn.Pkg() == c.pass.Pkg:
		if to := c.byObj[fn]; to != nil {
			n.edges = append(n.edges, edge{pos: id.Pos(), to: to})
		}
	default:
		if r := ruleFor(fn); r != nil {
			c.find(n, id.Pos(), r, qualified(fn))
		} else if c.followable(fn.Pkg()) {
			var s summary
			if c.pass.ImportObjectFact(fn, &s) {
				n.edges = append(n.edges, edge{pos: id.Pos(), ext: &s})
			}
		}
	}
}

// varUse handles a use of a variable: a package variable is followed into
// its initializer, and reported if it is mutable.
func (c *pkgAnalysis) varUse(n *node, id *ast.Ident, v *types.Var) {
	if v.IsField() || v.Pkg() == nil || v.Parent() != v.Pkg().Scope() {
		return
	}
	if v.Pkg() == c.pass.Pkg {
		if to := c.byObj[v]; to != nil {
			n.edges = append(n.edges, edge{pos: id.Pos(), to: to})
		}
		if at, ok := c.mutated[v]; ok {
			c.find(n, id.Pos(), ruleGlobal, fmt.Sprintf("package variable %s (modified at %s)", v.Name(), c.short(at)))
		}
		return
	}
	if r := ruleFor(v); r != nil {
		c.find(n, id.Pos(), r, qualified(v))
		return
	}
	if !c.followable(v.Pkg()) {
		return
	}
	var s summary
	hasFact := c.pass.ImportObjectFact(v, &s)
	at := s.Mutable
	if p, ok := c.mutated[v]; ok && at == "" {
		at = c.long(p)
	}
	if at != "" {
		c.find(n, id.Pos(), ruleGlobal, fmt.Sprintf("package variable %s.%s (modified at %s)", v.Pkg().Name(), v.Name(), at))
	}
	if hasFact && len(s.Findings) > 0 {
		n.edges = append(n.edges, edge{pos: id.Pos(), ext: &summary{Findings: s.Findings}})
	}
}

// --- facts and reports ---------------------------------------------------------------------

// reach walks the nodes reachable from start (not through reviewed lines),
// breadth first, calling visit with each and its parent; with stopAtRoots
// it does not enter other workflow code.
func (c *pkgAnalysis) reach(start *node, stopAtRoots bool, visit func(n, parent *node)) {
	parent := map[*node]*node{start: nil}
	queue := []*node{start}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		visit(n, parent[n])
		for _, e := range n.edges {
			if e.to == nil || c.reviewed(e.pos) || stopAtRoots && e.to.isRoot {
				continue
			}
			if _, seen := parent[e.to]; !seen {
				parent[e.to] = n
				queue = append(queue, e.to)
			}
		}
	}
}

// chain returns the names from below the start of a reach to n.
func chain(n *node, parents map[*node]*node) []string {
	var names []string
	for ; parents[n] != nil; n = parents[n] {
		names = append(names, n.name)
	}
	slices.Reverse(names)
	return names
}

// exportFacts exports a summary for every exported function, method and
// package variable that is not workflow code itself and breaks replay.
func (c *pkgAnalysis) exportFacts() {
	for obj, n := range c.byObj {
		if !obj.Exported() {
			continue
		}
		if n.isRoot { // reported in this package; only what a caller needs to know of its receiver
			if fn, ok := obj.(*types.Func); ok && c.mutatesRecv[fn] {
				c.pass.ExportObjectFact(obj, &summary{ModifiesReceiver: true})
			}
			continue
		}
		name := obj.Name()
		if fn, ok := obj.(*types.Func); ok {
			name = funcName(fn)
		}
		s := c.summarize(n, name)
		if v, ok := obj.(*types.Var); ok {
			if at, ok := c.mutated[v]; ok {
				s.Mutable = c.long(at)
			}
		}
		if fn, ok := obj.(*types.Func); ok {
			s.ModifiesReceiver = c.mutatesRecv[fn]
		}
		if s.Mutable != "" || s.ModifiesReceiver || len(s.Findings) > 0 {
			c.pass.ExportObjectFact(obj, s)
		}
	}
	// Exported variables without an initializer have no node.
	for v, at := range c.mutated {
		if _, hasNode := c.byObj[v]; !hasNode && v.Pkg() == c.pass.Pkg && v.Exported() {
			c.pass.ExportObjectFact(v, &summary{Mutable: c.long(at)})
		}
	}
}

// summarize returns what start breaks, transitively, for a fact.
func (c *pkgAnalysis) summarize(start *node, name string) *summary {
	s := &summary{}
	parents := map[*node]*node{}
	qualify := func(n *node) string {
		if n == start {
			return c.pass.Pkg.Name() + "." + name
		}
		return n.name
	}
	via := func(n *node) []string {
		out := []string{qualify(start)}
		for _, name := range chain(n, parents) {
			out = append(out, name)
		}
		return out
	}
	c.reach(start, true, func(n, parent *node) {
		parents[n] = parent
		for _, f := range n.findings {
			if !c.reviewed(f.pos) && len(s.Findings) < maxFactFindings {
				s.Findings = append(s.Findings, remote{Rule: f.rule.name, What: f.what, At: c.long(f.pos), Via: via(n)})
			}
		}
		for _, e := range n.edges {
			if e.ext == nil || c.reviewed(e.pos) {
				continue
			}
			for _, r := range e.ext.Findings {
				if len(s.Findings) < maxFactFindings {
					s.Findings = append(s.Findings, remote{Rule: r.Rule, What: r.What, At: r.At, Via: append(via(n), r.Via...)})
				}
			}
		}
	})
	return s
}

// report reports every finding reachable from the workflow code, once, with
// the chain from the first root that reaches it.
func (c *pkgAnalysis) report() {
	done := map[string]bool{}
	for _, root := range c.roots {
		where := c.regNames[root]
		if where == "" {
			where = "workflow code " + root.name
		}
		parents := map[*node]*node{}
		c.reach(root, false, func(n, parent *node) {
			parents[n] = parent
			path := chain(n, parents)
			for _, f := range n.findings {
				key := fmt.Sprint(f.pos, f.rule.name)
				if c.reviewed(f.pos) || done[key] {
					continue
				}
				done[key] = true
				c.diag(f.pos, f.rule, f.what, where, path)
			}
			for _, e := range n.edges {
				if e.ext == nil || c.reviewed(e.pos) {
					continue
				}
				for _, r := range e.ext.Findings {
					key := r.At + " " + r.Rule
					if done[key] {
						continue
					}
					done[key] = true
					rl := rules[r.Rule]
					if rl == nil {
						continue
					}
					c.diag(e.pos, rl, fmt.Sprintf("%s (at %s)", r.What, r.At), where, append(slices.Clone(path), r.Via...))
				}
			}
		})
	}
}

func (c *pkgAnalysis) diag(pos token.Pos, r *rule, what, where string, path []string) {
	msg := what + " in " + where
	if len(path) > 0 {
		msg += " via " + strings.Join(path, " → ")
	}
	c.pass.Report(analysis.Diagnostic{Pos: pos, Category: r.name, Message: msg + ": " + r.why + "; " + r.use})
}

// short renders pos as file.go:line.
func (c *pkgAnalysis) short(pos token.Pos) string {
	p := c.pass.Fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// long renders pos as pkg/path/file.go:line:col, for other packages.
func (c *pkgAnalysis) long(pos token.Pos) string {
	p := c.pass.Fset.Position(pos)
	return fmt.Sprintf("%s/%s:%d:%d", c.pass.Pkg.Path(), filepath.Base(p.Filename), p.Line, p.Column)
}

// funcName names a declared function for chains: f, or T.m for a method.
func funcName(fn *types.Func) string {
	if r := recvName(fn); r != "" {
		return r + "." + fn.Name()
	}
	return fn.Name()
}

// qualified names an object of another package: time.Now,
// sync.Mutex.Lock, math/rand/v2.IntN.
func qualified(obj types.Object) string {
	pkg := obj.Pkg().Path()
	if strings.Contains(pkg, ".") { // not the standard library: its name
		pkg = obj.Pkg().Name()
	}
	if fn, ok := obj.(*types.Func); ok {
		if r := recvName(fn); r != "" {
			return pkg + "." + r + "." + fn.Name()
		}
	}
	return pkg + "." + obj.Name()
}
