// Package rules holds one workflow per rule of the analyzer, each breaking
// it in every way the rule covers.
package rules

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"database/sql"
	"io/ioutil"
	"maps"
	"math/rand"
	randv2 "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/worker"
)

// Register registers the workflows by their ffqn; the ones it leaves out
// are workflow code by their signature.
func Register(w *worker.Worker) {
	worker.Workflow(w, "shop:rules/workflow.clock", Clock)
	worker.Workflow(w, "shop:rules/workflow.timers", Timers)
	worker.Workflow(w, "shop:rules/workflow.random", Random)
	worker.Workflow(w, "shop:rules/workflow.goroutine", Goroutine)
	worker.Workflow(w, "shop:rules/workflow.activity-api", func(wf *worker.Context, _ worker.Unit) (string, error) {
		id, err := w.Submit(context.Background(), "shop:rules/activity.a", nil) // want `^worker.Worker.Submit in workflow "shop:rules/workflow.activity-api": it talks to the store outside the workflow's history \(it is meant for activities and clients\); start children with worker.Call or js.Submit, and top-level executions with wf.Schedule$` `^context.Background in workflow "shop:rules/workflow.activity-api": a workflow has no context.Context`
		if err != nil {
			return "", err
		}
		return worker.Await[string](context.TODO(), w, id) // want `^worker.Await in workflow` `^context.TODO in workflow`
	})
}

func Clock(wf *worker.Context, _ worker.Unit) (time.Duration, error) {
	start := time.Now()           // want `^time.Now in workflow "shop:rules/workflow.clock" \(Clock\): the wall clock reads differently on a replay; use wf.Now\(\), which is recorded in the history$`
	_ = time.Until(start)         // want `^time.Until in workflow "shop:rules/workflow.clock" \(Clock\)`
	return time.Since(start), nil // want `^time.Since in workflow`
}

func Timers(wf *worker.Context, d time.Duration) (worker.Unit, error) {
	time.Sleep(d)         // want `^time.Sleep in workflow "shop:rules/workflow.timers" \(Timers\): a sleep is not recorded: a replay sleeps again and a restarted worker forgets it; use wf.Sleep\(d\) or wf.SleepUntil\(t\), durable delays$`
	t := time.NewTimer(d) // want `^time.NewTimer in workflow .*: a timer is not recorded and does not survive a restart; use wf.Sleep\(d\), or js.SubmitDelay\(d\) in a join set to race a delay against children$`
	defer t.Stop()
	tk := time.NewTicker(d) // want `^time.NewTicker in workflow`
	defer tk.Stop()
	_ = time.AfterFunc(d, func() {}) // want `^time.AfterFunc in workflow`
	_ = time.Tick(d)                 // want `^time.Tick in workflow`
	_ = time.After(d)                // want `^time.After in workflow`
	return worker.Unit{}, nil
}

func Random(wf *worker.Context, _ worker.Unit) (int, error) {
	a := rand.Intn(10)   // want `^math/rand.Intn in workflow "shop:rules/workflow.random" \(Random\): a random value is not recorded: a replay draws another one; use wf.Random\(min, max\) or wf.RandomString\(minLen, maxLen\), which are persisted$`
	b := randv2.IntN(10) // want `^math/rand/v2.IntN in workflow`
	var buf [8]byte
	_, _ = crand.Read(buf[:])                                 // want `^crypto/rand.Read in workflow`
	_, _ = crand.Reader.Read(buf[:])                          // want `^crypto/rand.Reader in workflow`
	seeded := rand.New(rand.NewSource(time.Now().UnixNano())) // want `^time.Now in workflow`
	return a + b + seeded.Intn(3), nil
}

func Goroutine(wf *worker.Context, _ worker.Unit) (int, error) {
	done := make(chan int)
	go func() { done <- 1 }() // want `^go statement in workflow "shop:rules/workflow.goroutine" \(Goroutine\): goroutine scheduling is not recorded, and wf is only valid on the workflow's goroutine; run concurrent work as children in a join set \(wf.NewJoinSet, js.Submit, js.Next\)$` `^channel send in workflow "shop:rules/workflow.goroutine" \(Goroutine\) via func literal \(rules.go:73\)`
	return <-done, nil        // want `^channel receive in workflow .*: channel communication with other goroutines is not recorded; exchange values through the history: worker.Call, or children in a join set \(js.Submit, js.Next\)$`
}

// Channels is workflow code by its signature.
func Channels(wf *worker.Context, in chan int) (int, error) {
	out := make(chan int, 1)
	select { // want `^select statement in workflow code Channels: which case is ready first is not recorded; await a join set: js.Next returns responses in their recorded order \(js.SubmitDelay for a timeout\)$`
	case v := <-in:
		out <- v // want `^channel send in workflow code Channels`
	case out <- 0:
	}
	sum := 0
	for v := range in { // want `^range over channel in in workflow code Channels`
		sum += v
	}
	return sum, nil
}

func MapRange(wf *worker.Context, prices map[string]int) (int, error) {
	total := 0
	for item := range prices { // want `^range over map prices in workflow code MapRange: Go randomizes map iteration order, so a replay may visit the keys in another order; range over sorted keys: for _, k := range slices.Sorted\(maps.Keys\(m\)\)$`
		if _, err := worker.Call[int](wf, "shop:rules/activity.price", item); err != nil {
			return 0, err
		}
	}
	for item := range maps.Keys(prices) { // want `^range over maps.Keys\(prices\) in workflow code MapRange`
		total += len(item)
	}
	var unsorted []string
	for item := range prices { // want `^range over map prices in workflow code MapRange`
		unsorted = append(unsorted, item) // collected, but never sorted
	}
	return total + len(unsorted), nil
}

func Env(wf *worker.Context, _ worker.Unit) (string, error) {
	region := os.Getenv("REGION") // want `^os.Getenv in workflow code Env: the process environment differs between workers and restarts; read it in an activity \(worker.Call\) or pass it in the workflow's params$`
	if len(os.Args) > 1 {         // want `^os.Args in workflow code Env`
		region = os.Args[1] // want `^os.Args in workflow code Env`
	}
	out, _ := exec.Command("hostname").Output() // want `^os/exec.Command in workflow code Env` `^os/exec.Cmd.Output in workflow code Env`
	return region + string(out), nil
}

func Files(wf *worker.Context, path string) (int, error) {
	b, _ := os.ReadFile(path) // want `^os.ReadFile in workflow code Files: files change between runs and differ between workers; read or write them in an activity \(worker.Call\)$`
	f, err := os.Open(path)   // want `^os.Open in workflow code Files`
	if err == nil {
		f.Close() // want `^os.File.Close in workflow code Files`
	}
	if os.IsNotExist(err) { // the error predicates are fine
		return 0, nil
	}
	names, _ := filepath.Glob("*.json") // want `^path/filepath.Glob in workflow code Files`
	old, _ := ioutil.ReadFile(path)     // want `^io/ioutil.ReadFile in workflow code Files`
	return len(b) + len(names) + len(old), nil
}

func Network(wf *worker.Context, url string) (int, error) {
	resp, err := http.Get(url) // want `^net/http.Get in workflow code Network: network and database calls are not recorded: a replay repeats them and may get another answer; make the call in an activity \(worker.Call\)$`
	if err != nil {
		return 0, err
	}
	req, _ := http.NewRequest("GET", url, nil)           // building a request is fine
	_, _ = (&http.Client{}).Do(req)                      // want `^net/http.Client.Do in workflow code Network`
	conn, _ := net.Dial("tcp", "127.0.0.1:1")            // want `^net.Dial in workflow code Network`
	_ = conn.Close()                                     // want `^net.Conn.Close in workflow code Network`
	db, _ := sql.Open("sqlite", "x.db")                  // want `^database/sql.Open in workflow code Network`
	_, _ = db.Query("select 1")                          // want `^database/sql.DB.Query in workflow code Network`
	c, _ := client.New(url)                              // want `^client.New in workflow code Network: it talks to the store outside the workflow's history`
	_, _ = c.Get(context.Background(), wf.ExecutionID()) // want `^client.Client.Get in workflow code Network` `^context.Background in workflow code Network`
	return resp.StatusCode, nil
}

func Sync(wf *worker.Context, n int) (int64, error) {
	var mu sync.Mutex
	mu.Lock()         // want `^sync.Mutex.Lock in workflow code Sync: locks, atomics and wait groups coordinate goroutines, whose scheduling is not recorded \(a workflow runs on one goroutine\); drop the lock, and run concurrent work as children in a join set$`
	defer mu.Unlock() // want `^sync.Mutex.Unlock in workflow code Sync`
	var wg sync.WaitGroup
	wg.Wait() // want `^sync.WaitGroup.Wait in workflow code Sync`
	var count atomic.Int64
	count.Add(1) // want `^sync/atomic.Int64.Add in workflow code Sync`
	var plain int64
	atomic.AddInt64(&plain, 1)                       // want `^sync/atomic.AddInt64 in workflow code Sync`
	once := sync.OnceValue(func() int { return n })  // want `^sync.OnceValue in workflow code Sync`
	return count.Load() + plain + int64(once()), nil // want `^sync/atomic.Int64.Load in workflow code Sync`
}

// Package variables: mutable ones are reported, others are not.
var (
	counter  int                              // assigned by Bump
	cache    = map[string]int{}               // written by Remember
	log      bytes.Buffer                     // written through a pointer method
	region   = "eu"                           // assigned only in init: fine
	currency = "EUR"                          // never assigned: fine
	limits   = map[string]int{"book": 3}      // only read: fine
	hosts    []string                         // assigned by a range
	store    = &memStore{m: map[string]int{}} // modified by Save, through a method
)

type memStore struct{ m map[string]int }

func (s *memStore) Put(k string) { s.m[k]++ } // want Put:`^nondeterministic\(modifies its receiver\)$`

func (s *memStore) Get(k string) int { return s.m[k] }

func Save(k string) { store.Put(k) } // want Save:`global package variable store`

const maxItems = 10

func init() { region = "us" }

func Bump() { counter++ } // want Bump:`global package variable counter \(modified at rules.go:186\) at example.com/shop/rules/rules.go:186:15 via rules.Bump`

func Remember(k string) { cache[k] = len(k) } // want Remember:`global package variable cache`

func Note(s string) { log.WriteString(s) } // want Note:`global package variable log`

func Collect(all []string) { // want Collect:`global package variable hosts`
	for _, hosts[0] = range all {
	}
}

func Globals(wf *worker.Context, item string) (int, error) {
	n := counter         // want `^package variable counter \(modified at rules.go:186\) in workflow code Globals: a mutable package variable is not in the history: a replay on another worker or after a restart sees another value; pass the value in the workflow's params, read it in an activity, or make it a constant$`
	n += cache[item]     // want `^package variable cache \(modified at rules.go:188\)`
	n += log.Len()       // want `^package variable log \(modified at rules.go:190\)`
	n += len(hosts)      // want `^package variable hosts \(modified at rules.go:193\)`
	n += store.Get(item) // want `^package variable store \(modified at rules.go:180\)`
	counter = n          // want `^package variable counter`
	if region == "us" && currency == "EUR" && n < maxItems {
		return limits[item], nil
	}
	return n, nil
}

// OptOuts shows the reviewed lines: the comment at the end of the line, or
// alone on the line above; without a reason it is reported and ignored.
func OptOuts(wf *worker.Context, _ worker.Unit) (int64, error) {
	a := time.Now().Unix() //stela:nondeterministic-ok logged only, never decides anything
	//stela:nondeterministic-ok the metric is approximate and never read back
	b := time.Now().Unix()
	// want +1 `^time.Now in workflow code OptOuts` `^//stela:nondeterministic-ok needs a reason: say why this line is safe on replay$`
	c := time.Now().Unix() //stela:nondeterministic-ok
	//stela:nondeterministic-okay is not the directive
	d := time.Now().Unix() // want `^time.Now in workflow code OptOuts`
	return a + b + c + d, nil
}
