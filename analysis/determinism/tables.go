package determinism

import (
	"go/types"
	"slices"
	"strings"
)

// This file holds everything the analyzer knows by name: the SDK's entry
// points and the rules for the standard library. A new registration entry
// point (for example typed function handles) is one line in registrations;
// a new workflow context type one line in workflowContexts.

const (
	workerPkg = "github.com/stela-dev/stela/worker"
	clientPkg = "github.com/stela-dev/stela/client"
	corePkg   = "github.com/stela-dev/stela/core"
)

// sdkPackages are the SDK itself: calling into them is the deterministic
// API (except what apiRules lists as activity-only). They are neither
// analyzed nor followed.
var sdkPackages = []string{workerPkg, workerPkg + "/workertest", clientPkg, corePkg}

// workflowContexts are the workflow handles: a function that takes a pointer
// to one of them as a parameter is workflow code (docs/worker.md: a workflow
// talks to the world only through wf), wherever it is registered.
var workflowContexts = []typeName{{workerPkg, "Context"}}

// typeName names a declared type.
type typeName struct{ pkg, name string }

// registration is a function or method that registers a function: its
// argument fn is a workflow (workflow) or an activity.
type registration struct {
	pkg, recv, name string // recv: the receiver's type name, "" for a function
	fn              int    // index of the registered function among the arguments
	ffqn            int    // index of the ffqn argument (its constant value names the workflow), -1 if none
	workflow        bool
}

var registrations = []registration{
	{pkg: workerPkg, name: "Workflow", fn: 2, ffqn: 1, workflow: true},
	{pkg: workerPkg, name: "Activity", fn: 2, ffqn: 1},
	{pkg: workerPkg, recv: "WorkflowFunc", name: "Register", fn: 1, ffqn: -1, workflow: true},
	{pkg: workerPkg, recv: "ActivityFunc", name: "Register", fn: 1, ffqn: -1},
}

// rule is one kind of finding: why the construct breaks replay and what to
// use instead. Its name is the diagnostic's category.
type rule struct {
	name, why, use string
}

var (
	ruleClock     = &rule{"clock", "the wall clock reads differently on a replay", "use wf.Now(), which is recorded in the history"}
	ruleSleep     = &rule{"sleep", "a sleep is not recorded: a replay sleeps again and a restarted worker forgets it", "use wf.Sleep(d) or wf.SleepUntil(t), durable delays"}
	ruleTimer     = &rule{"timer", "a timer is not recorded and does not survive a restart", "use wf.Sleep(d), or js.SubmitDelay(d) in a join set to race a delay against children"}
	ruleRandom    = &rule{"random", "a random value is not recorded: a replay draws another one", "use wf.Random(min, max) or wf.RandomString(minLen, maxLen), which are persisted"}
	ruleGoroutine = &rule{"goroutine", "goroutine scheduling is not recorded, and wf is only valid on the workflow's goroutine", "run concurrent work as children in a join set (wf.NewJoinSet, js.Submit, js.Next)"}
	ruleSelect    = &rule{"select", "which case is ready first is not recorded", "await a join set: js.Next returns responses in their recorded order (js.SubmitDelay for a timeout)"}
	ruleChannel   = &rule{"channel", "channel communication with other goroutines is not recorded", "exchange values through the history: worker.Call, or children in a join set (js.Submit, js.Next)"}
	ruleMapRange  = &rule{"maprange", "Go randomizes map iteration order, so a replay may visit the keys in another order", "range over sorted keys: for _, k := range slices.Sorted(maps.Keys(m))"}
	ruleEnv       = &rule{"env", "the process environment differs between workers and restarts", "read it in an activity (worker.Call) or pass it in the workflow's params"}
	ruleFile      = &rule{"file", "files change between runs and differ between workers", "read or write them in an activity (worker.Call)"}
	ruleNetwork   = &rule{"network", "network and database calls are not recorded: a replay repeats them and may get another answer", "make the call in an activity (worker.Call)"}
	ruleContext   = &rule{"context", "a workflow has no context.Context: the call that needs one does I/O or waits outside the history", "make the call in an activity (worker.Call)"}
	ruleGlobal    = &rule{"global", "a mutable package variable is not in the history: a replay on another worker or after a restart sees another value", "pass the value in the workflow's params, read it in an activity, or make it a constant"}
	ruleSync      = &rule{"sync", "locks, atomics and wait groups coordinate goroutines, whose scheduling is not recorded (a workflow runs on one goroutine)", "drop the lock, and run concurrent work as children in a join set"}
	ruleActivity  = &rule{"activity-api", "it talks to the store outside the workflow's history (it is meant for activities and clients)", "start children with worker.Call or js.Submit, and top-level executions with wf.Schedule"}
	ruleOptOut    = &rule{"optout", "", ""}
)

// rules maps a rule's name to it (facts carry the name).
var rules = func() map[string]*rule {
	m := map[string]*rule{}
	for _, r := range []*rule{ruleClock, ruleSleep, ruleTimer, ruleRandom, ruleGoroutine, ruleSelect, ruleChannel,
		ruleMapRange, ruleEnv, ruleFile, ruleNetwork, ruleContext, ruleGlobal, ruleSync, ruleActivity, ruleOptOut} {
		m[r.name] = r
	}
	return m
}()

// api matches functions, methods and package variables of one package.
type api struct {
	pkg string
	// recvs are the receiver type names of the matched methods ("*": any);
	// nil matches package-level functions and variables instead.
	recvs []string
	// names are the matched names; nil matches every name but except.
	names, except []string
	rule          *rule
}

func names(s string) []string { return strings.Fields(s) }

// apiRules are the APIs that break replay, by package. The first match wins.
var apiRules = []api{
	{pkg: "time", names: names("Now Since Until"), rule: ruleClock},
	{pkg: "time", names: names("Sleep"), rule: ruleSleep},
	{pkg: "time", names: names("After AfterFunc NewTimer NewTicker Tick"), rule: ruleTimer},

	// A generator from New(source) is deterministic given its seed (a seed
	// read from the clock is reported as such): only the global ones are.
	{pkg: "math/rand", except: names("New NewSource NewZipf"), rule: ruleRandom},
	{pkg: "math/rand/v2", except: names("New NewPCG NewChaCha8 NewZipf"), rule: ruleRandom},
	{pkg: "crypto/rand", rule: ruleRandom},

	{pkg: "os", names: names("Args Getenv LookupEnv Environ ExpandEnv Setenv Unsetenv Clearenv Hostname Getpid Getppid " +
		"Getuid Geteuid Getgid Getegid Getgroups Getpagesize Executable Getwd UserHomeDir UserCacheDir UserConfigDir TempDir"), rule: ruleEnv},
	{pkg: "os", except: names("IsExist IsNotExist IsPermission IsTimeout IsPathSeparator NewSyscallError Expand Exit " +
		"ErrInvalid ErrPermission ErrExist ErrNotExist ErrClosed ErrNoDeadline ErrDeadlineExceeded ErrProcessDone " +
		"Stdin Stdout Stderr Interrupt Kill DevNull"), rule: ruleFile},
	{pkg: "os", recvs: names("File Process Root"), rule: ruleFile},
	{pkg: "os/exec", rule: ruleEnv},
	{pkg: "os/exec", recvs: []string{"*"}, rule: ruleEnv},
	{pkg: "os/user", rule: ruleEnv},
	{pkg: "os/signal", rule: ruleEnv},
	{pkg: "syscall", rule: ruleEnv},
	{pkg: "io/ioutil", names: names("ReadFile ReadDir WriteFile TempDir TempFile"), rule: ruleFile},
	{pkg: "path/filepath", names: names("Abs EvalSymlinks Glob Walk WalkDir"), rule: ruleFile},

	{pkg: "net", except: names("ParseIP ParseCIDR ParseMAC IPv4 IPv4Mask CIDRMask JoinHostPort SplitHostPort " +
		"ErrClosed ErrWriteToConnected IPv4bcast IPv4allsys IPv4allrouter IPv4zero IPv6zero IPv6unspecified IPv6loopback " +
		"IPv6interfacelocalallnodes IPv6linklocalallnodes IPv6linklocalallrouters"), rule: ruleNetwork},
	{pkg: "net", recvs: names("Dialer Resolver ListenConfig Conn PacketConn Listener conn TCPConn UDPConn UnixConn IPConn " +
		"TCPListener UnixListener"), rule: ruleNetwork},
	{pkg: "net/http", names: names("Get Head Post PostForm ListenAndServe ListenAndServeTLS Serve ServeTLS DefaultClient"), rule: ruleNetwork},
	{pkg: "net/http", recvs: names("Client Transport Server RoundTripper"), rule: ruleNetwork},
	{pkg: "net/rpc", rule: ruleNetwork},
	{pkg: "net/rpc", recvs: []string{"*"}, rule: ruleNetwork},
	{pkg: "net/smtp", rule: ruleNetwork},
	{pkg: "net/smtp", recvs: []string{"*"}, rule: ruleNetwork},
	{pkg: "database/sql", names: names("Open OpenDB"), rule: ruleNetwork},
	{pkg: "database/sql", recvs: names("DB Tx Conn Stmt Rows Row"), rule: ruleNetwork},
	{pkg: "context", names: names("Background TODO"), rule: ruleContext},

	{pkg: "sync", rule: ruleSync},
	{pkg: "sync", recvs: []string{"*"}, rule: ruleSync},
	{pkg: "sync/atomic", rule: ruleSync},
	{pkg: "sync/atomic", recvs: []string{"*"}, rule: ruleSync},

	// The SDK's activity-only APIs: what needs a *worker.Worker or a
	// context.Context talks to the store outside the history.
	{pkg: workerPkg, names: names("New Await"), rule: ruleActivity},
	{pkg: workerPkg, recvs: names("Worker"), names: names("Submit Run RunUntilIdle Close Stats"), rule: ruleActivity},
	{pkg: workerPkg, recvs: names("Func"), names: names("Start Await"), rule: ruleActivity},
	{pkg: clientPkg, rule: ruleActivity},
	{pkg: clientPkg, recvs: []string{"*"}, rule: ruleActivity},
}

// apiRulesByPkg indexes apiRules by package path.
var apiRulesByPkg = func() map[string][]api {
	m := map[string][]api{}
	for _, a := range apiRules {
		m[a.pkg] = append(m[a.pkg], a)
	}
	return m
}()

// ruleFor returns the rule an object of another package breaks, if any: a
// function, a method (by its receiver's type name) or a package variable.
func ruleFor(obj types.Object) *rule {
	switch obj.(type) {
	case *types.Func, *types.Var:
	default:
		return nil
	}
	if obj.Pkg() == nil {
		return nil
	}
	recv := ""
	if fn, ok := obj.(*types.Func); ok {
		recv = recvName(fn)
	}
	for _, a := range apiRulesByPkg[obj.Pkg().Path()] {
		if (recv == "") != (a.recvs == nil) {
			continue
		}
		if recv != "" && !slices.Contains(a.recvs, "*") && !slices.Contains(a.recvs, recv) {
			continue
		}
		if a.names != nil && !slices.Contains(a.names, obj.Name()) || slices.Contains(a.except, obj.Name()) {
			continue
		}
		return a.rule
	}
	return nil
}

// recvName returns the name of a method's receiver type ("" for a function).
func recvName(fn *types.Func) string {
	recv := fn.Signature().Recv()
	if recv == nil {
		return ""
	}
	t := types.Unalias(recv.Type())
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name()
	}
	return "?"
}

// isSDK reports whether path is a package of the SDK itself.
func isSDK(path string) bool {
	for _, p := range sdkPackages {
		if path == p {
			return true
		}
	}
	return false
}

// isWorkflowContext reports whether t is a pointer to a workflow context type.
func isWorkflowContext(t types.Type) bool {
	p, ok := types.Unalias(t).(*types.Pointer)
	if !ok {
		return false
	}
	n, ok := types.Unalias(p.Elem()).(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return false
	}
	return slices.Contains(workflowContexts, typeName{n.Obj().Pkg().Path(), n.Obj().Name()})
}

// registrationFor returns the registration fn is, if any.
func registrationFor(fn *types.Func) *registration {
	if fn.Pkg() == nil {
		return nil
	}
	for i, r := range registrations {
		if r.pkg == fn.Pkg().Path() && r.name == fn.Name() && r.recv == recvName(fn) {
			return &registrations[i]
		}
	}
	return nil
}
