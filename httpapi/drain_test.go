package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
)

// testDraining: once Options.Draining is closed, every kind of long poll
// answers with what it has instead of waiting out its bound (MaxFollowWait
// here, far beyond the test's patience), both the polls already waiting
// and those that start later.
func testDraining(t *testing.T, fresh func(*testing.T, ...envOption) *env) {
	draining := make(chan struct{})
	e := fresh(t, func(o *Options) { o.FollowWait = MaxFollowWait; o.Draining = draining })
	id := e.submit(ffqnActivity, core.ComponentTypeActivity, "[1]")
	lock := lockParams(core.ComponentTypeActivity, t0.Add(time.Minute))
	lock["batch_size"], lock["ffqns"], lock["wait_ms"] = 1, []core.FunctionFqn{mustFFQN("testing:integration/activity.none")}, 60000
	raw, err := core.MarshalJSON(lock)
	if err != nil {
		t.Fatal(err)
	}
	polls := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"lock", "POST", "/v1/worker/lock/pending-by-ffqns", string(raw), http.StatusOK, "[]"},
		{"next-responses", "GET", "/v1/worker/executions/" + id.String() + "/next-responses?wait_ms=60000", "", http.StatusOK, `{"responses":[]}`},
		{"worker result", "GET", "/v1/worker/executions/" + id.String() + "/result?wait_ms=60000", "", http.StatusTooEarly, "not finished yet"},
		{"follow", "GET", "/v1/executions/" + id.String() + "?follow=true", "", http.StatusTooEarly, "not finished yet"},
	}
	run := func(round string) {
		done := make(chan string, len(polls))
		for _, p := range polls {
			go func() {
				req := httptest.NewRequest(p.method, p.path, strings.NewReader(p.body))
				if p.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				rec := httptest.NewRecorder()
				e.h.ServeHTTP(rec, req)
				if body := strings.TrimSpace(rec.Body.String()); rec.Code != p.status || !strings.Contains(body, p.want) {
					done <- p.name + ": " + rec.Result().Status + " " + body
					return
				}
				done <- ""
			}()
		}
		if round == "waiting" {
			close(draining)
		}
		for range polls {
			select {
			case bad := <-done:
				if bad != "" {
					t.Errorf("%s: %s", round, bad)
				}
			case <-time.After(10 * time.Second): // the polls' own bound is 29 s
				t.Fatalf("%s: a long poll did not answer after the server began to drain", round)
			}
		}
	}
	run("waiting")
	run("started after")
}
