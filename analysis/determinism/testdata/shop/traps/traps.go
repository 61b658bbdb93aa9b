// Package traps holds code the analyzer must not report: activities doing
// everything a workflow must not, helpers only activities call, reviewed
// lines, deterministic idioms in workflows, and calls into another module.
package traps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"example.com/thirdparty/stamp"
	"github.com/stela-dev/stela/worker"
)

func Register(w *worker.Worker) {
	worker.Activity(w, "shop:traps/activity.charge", Charge)
	worker.Activity(w, "shop:traps/activity.inline", func(ctx context.Context, _ worker.Unit) (string, error) {
		return time.Now().String() + os.Getenv("REGION"), nil // an activity registered in place
	})
	svc := &Service{}
	worker.Activity(w, "shop:traps/activity.fetch", svc.Fetch) // a method value
	worker.Workflow(w, "shop:traps/workflow.clean", Clean)
	worker.Workflow(w, "shop:traps/workflow.shared", func(wf *worker.Context, n int) (string, error) {
		return shared(n), nil
	})
}

// Charge is an activity: it may read the clock, the network, a map in any
// order, and start goroutines. Nothing is reported, but its fact says what
// a workflow calling it directly (not as an activity) would break.
func Charge(ctx context.Context, amount int) (string, error) { // want Charge:`clock time.Now at .* via traps.Charge; network net/http.Get`
	start := time.Now()
	resp, err := http.Get("http://127.0.0.1:1/charge?amount=" + strconv.Itoa(amount))
	if err == nil {
		resp.Body.Close()
	}
	done := make(chan struct{})
	go func() { close(done) }()
	<-done
	for k := range map[string]int{"a": 1} {
		_ = k
	}
	return audit(amount) + shared(amount) + time.Since(start).String(), nil
}

// audit is a helper that only activities call.
func audit(n int) string {
	return os.Getenv("AUDIT") + strconv.Itoa(rand.Intn(n+1))
}

// shared is called by an activity and by a workflow: reported, for the workflow.
func shared(n int) string {
	return strconv.Itoa(n) + os.Getenv("SHARED") // want `^os.Getenv in workflow "shop:traps/workflow.shared" via shared:`
}

// Service is an activity's receiver.
type Service struct {
	mu    sync.Mutex
	calls int
}

func (s *Service) Fetch(ctx context.Context, host string) (string, error) { // want Fetch:`sync sync.Mutex.Lock`
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	addrs, err := net.DefaultResolver.LookupHost(ctx, host)
	return strings.Join(addrs, ","), err
}

const fee = 3

// Immutable package variables: read freely.
var (
	Currencies  = []string{"EUR", "USD"}
	ErrDeclined = errors.New("declined")
	region      = "eu"
)

// registry is only read, through a pointer method that does not modify it.
var registry = Registry{names: map[string]string{"EUR": "euro"}}

type Registry struct{ names map[string]string }

func (r *Registry) Lookup(code string) string { return r.names[code] }

func Describe(code string) string { return registry.Lookup(code) }

// region is assigned in init only.
func init() { region = strings.ToUpper(region) }

type line struct {
	Item  string `json:"item"`
	Price int    `json:"price"`
}

// Clean is a workflow that uses only deterministic constructs.
func Clean(wf *worker.Context, prices map[string]int) (string, error) {
	total := 0
	for _, k := range slices.Sorted(maps.Keys(prices)) { // sorted keys
		total += prices[k]
	}
	var keys []string
	for k := range prices { // keys collected, then sorted
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var values []int
	for _, v := range prices { // values collected, then sorted
		values = append(values, v)
	}
	slices.Sort(values)

	t := wf.Now() // durable time, sleeps and randomness from the SDK
	deadline := t.Add(time.Hour)
	if err := wf.Sleep(deadline.Sub(t) / 60); err != nil {
		return "", err
	}
	n := wf.Random(1, 6)
	js := wf.NewJoinSet()
	for _, k := range keys {
		if _, err := js.Submit("shop:traps/activity.charge", prices[k]); err != nil {
			return "", err
		}
	}
	if _, err := js.SubmitDelay(time.Minute); err != nil {
		return "", err
	}
	for range len(keys) + 1 {
		if _, err := js.Next(); err != nil {
			return "", err
		}
	}
	if _, err := wf.Schedule("shop:traps/workflow.clean", prices, worker.In(24*time.Hour)); err != nil {
		return "", err
	}

	if total > fee && len(Currencies) > 0 && region != "" && registry.Lookup("EUR") != "" { // constants and immutable variables
		return "", ErrDeclined
	}
	var sb strings.Builder // pure library calls
	sb.WriteString(fmt.Sprintf("%d items, %d", len(keys), n))
	b, _ := json.Marshal(line{Item: keys[0], Price: total})
	sb.Write(b)
	r := rand.New(rand.NewSource(42)) // a generator with a fixed seed
	sb.WriteString(strconv.Itoa(r.Intn(10)))
	sb.WriteString(stamp.Now()) // another module: not followed
	if errors.Is(os.ErrNotExist, ErrDeclined) || os.IsNotExist(ErrDeclined) {
		return "", nil
	}
	logged := time.Now() //stela:nondeterministic-ok only logged, never decides anything
	_ = logged
	return sb.String() + (3 * time.Second).String(), tidy(wf)
}

// tidy is workflow code (it takes wf) calling only the SDK.
func tidy(wf *worker.Context) error {
	if wf.IsReplaying() {
		return nil
	}
	return wf.SleepUntil(wf.Now().Add(time.Second))
}
