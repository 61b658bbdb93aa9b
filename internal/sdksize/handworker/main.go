// Command handworker is sdkworker written by hand, the yardstick of the
// SDK's size: net/http and encoding/json, a long poll on
// POST /v1/worker/lock/pending-by-ffqns for greet(name), and the result
// appended as a Finished event with POST /v1/worker/append. It does what a
// plain worker does and no more (no retries, leases, caching or
// deployments).
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"time"
)

const ffqn = "demo:hello/greeter.greet"

type componentID struct {
	InputDigest   string `json:"input_digest"`
	Name          string `json:"name"`
	ComponentType string `json:"component_type"`
}

type lockBody struct {
	ComponentID   componentID     `json:"component_id"`
	DeploymentID  string          `json:"deployment_id"`
	ExecutorID    string          `json:"executor_id"`
	RunID         string          `json:"run_id"`
	LockExpiresAt time.Time       `json:"lock_expires_at"`
	RetryConfig   json.RawMessage `json:"retry_config"`
	BatchSize     uint32          `json:"batch_size"`
	FFQNs         []string        `json:"ffqns"`
	WaitMs        uint64          `json:"wait_ms"`
}

type locked struct {
	ExecutionID string            `json:"execution_id"`
	NextVersion uint32            `json:"next_version"`
	Params      []json.RawMessage `json:"params"`
}

type appendBody struct {
	ExecutionID string          `json:"execution_id"`
	Version     uint32          `json:"version"`
	Req         json.RawMessage `json:"req"`
}

func id(prefix string) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

func post(ctx context.Context, url string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "Stela server URL")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	executor := id("exr")
	for ctx.Err() == nil {
		var batch []locked
		err := post(ctx, *url+"/v1/worker/lock/pending-by-ffqns", lockBody{
			ComponentID:  componentID{InputDigest: "sha256:" + hex.EncodeToString(make([]byte, 32)), Name: "handworker", ComponentType: "activity_wasm"},
			DeploymentID: id("dep"), ExecutorID: executor, RunID: id("run"),
			LockExpiresAt: time.Now().Add(time.Minute), RetryConfig: json.RawMessage(`{"max_retries":0,"retry_exp_backoff":{"secs":1,"nanos":0}}`),
			BatchSize: 1, FFQNs: []string{ffqn}, WaitMs: 20000,
		}, &batch)
		if err != nil {
			log.Print(err)
			time.Sleep(time.Second)
			continue
		}
		for _, l := range batch {
			var name string
			if len(l.Params) == 1 {
				_ = json.Unmarshal(l.Params[0], &name)
			}
			result, _ := json.Marshal(fmt.Sprintf("Hello, %s!", name))
			req, _ := json.Marshal(map[string]any{
				"created_at": time.Now(),
				"event":      map[string]any{"finished": map[string]any{"retval": map[string]any{"ok": json.RawMessage(result)}}},
			})
			if err := post(ctx, *url+"/v1/worker/append", appendBody{ExecutionID: l.ExecutionID, Version: l.NextVersion, Req: req}, nil); err != nil {
				log.Print(err)
			}
		}
	}
}
