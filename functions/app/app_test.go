package app_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/functions/app"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfig(t *testing.T) {
	t.Run("ReadsEveryVariable", func(t *testing.T) {
		c, err := app.LoadConfig(env(map[string]string{
			app.EnvTable: "stela", app.EnvBucket: "blobs", app.EnvBucketPrefix: "cas/", app.EnvAPIToken: " t0k ",
			app.EnvLogLevel: "debug", app.EnvShards: "16", app.EnvInlineThreshold: "4096", app.EnvFollowWait: "10s",
			app.EnvTimersInterval: "500ms", app.EnvTimersLeeway: "100ms", app.EnvTimersBudget: "50s", app.EnvTimersMargin: "3s",
			app.EnvMetricsNamespace: "Stela/prod",
			app.EnvRetention:        "7d",
		}))
		if err != nil {
			t.Fatal(err)
		}
		want := app.Config{Table: "stela", Bucket: "blobs", BucketPrefix: "cas/", APIToken: "t0k", LogLevel: slog.LevelDebug,
			Shards: 16, InlineThreshold: 4096, FollowWait: 10 * time.Second, TimersInterval: 500 * time.Millisecond,
			TimersLeeway: 100 * time.Millisecond, TimersMaxBudget: 50 * time.Second, TimersMargin: 3 * time.Second,
			MetricsNamespace: "Stela/prod",
			Retention:        core.RetainFor(7 * 24 * time.Hour)}
		if c != want {
			t.Errorf("config = %+v\nwant     %+v", c, want)
		}
	})
	t.Run("LeanLayoutReachesTheDynamoOptions", func(t *testing.T) {
		c, err := app.LoadConfig(env(map[string]string{app.EnvTable: "stela", app.EnvShards: "4",
			app.EnvDigestIndex: "off", app.EnvDeploymentCounts: "off"}))
		if err != nil {
			t.Fatal(err)
		}
		o := c.DynamoOptions()
		if o.Table != "stela" || o.Shards != 4 || !o.DisableDigestIndex || !o.DisableDeploymentCounts {
			t.Errorf("options = %+v", o)
		}
	})
	t.Run("OnlyTheTableIsRequired", func(t *testing.T) {
		c, err := app.LoadConfig(env(map[string]string{app.EnvTable: "stela"}))
		if err != nil || c != (app.Config{Table: "stela", Retention: core.RetainFor(core.DefaultRetentionPeriod)}) {
			t.Errorf("config = %+v, %v", c, err)
		}
	})
	t.Run("RetentionForever", func(t *testing.T) {
		c, err := app.LoadConfig(env(map[string]string{app.EnvTable: "stela", app.EnvRetention: "forever"}))
		if err != nil || !c.Retention.Forever() {
			t.Errorf("config = %+v, %v", c, err)
		}
	})
	t.Run("ReportsEveryInvalidVariableAtOnce", func(t *testing.T) {
		_, err := app.LoadConfig(env(map[string]string{app.EnvShards: "-1", app.EnvLogLevel: "loud",
			app.EnvTimersInterval: "soon", app.EnvBucketPrefix: "cas", app.EnvRetention: "0s"}))
		if err == nil {
			t.Fatal("no error")
		}
		for _, want := range []string{app.EnvTable, app.EnvShards, app.EnvLogLevel, app.EnvTimersInterval, app.EnvBucketPrefix, app.EnvRetention} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %s: %v", want, err)
			}
		}
	})
}

func TestNew(t *testing.T) {
	t.Run("BuildsTheStackWithoutCallingAWS", func(t *testing.T) {
		t.Setenv("AWS_REGION", "us-east-1")
		t.Setenv("AWS_ACCESS_KEY_ID", "test")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
		t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:1")
		var logs bytes.Buffer
		a, err := app.New(context.Background(), app.Config{Table: "stela", Bucket: "blobs", APIToken: "x"}, &logs)
		if err != nil {
			t.Fatal(err)
		}
		if a.Store == nil || a.CAS == nil || a.Dynamo == nil {
			t.Errorf("incomplete app: %+v", a)
		}
		if a.HTTPOptions().Sweep == nil {
			t.Error("the sweep route is not wired")
		}
		a.Logger.Info("hello")
		if !strings.HasPrefix(logs.String(), `{"time":`) {
			t.Errorf("logger does not write JSON: %s", logs.String())
		}
	})
	t.Run("WithoutBucketThereIsNoCAS", func(t *testing.T) {
		t.Setenv("AWS_REGION", "us-east-1")
		t.Setenv("AWS_ACCESS_KEY_ID", "test") // the Lambda environment has them (AWSConfigFromEnv)
		t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
		a, err := app.New(context.Background(), app.Config{Table: "stela"}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if a.CAS != nil {
			t.Errorf("CAS = %v, want nil", a.CAS)
		}
	})
}

func TestIndexSwitches(t *testing.T) {
	env := map[string]string{app.EnvTable: "t", app.EnvDigestIndex: "off", app.EnvDeploymentCounts: "off"}
	c, err := app.LoadConfig(func(k string) string { return env[k] })
	if err != nil || !c.NoDigestIndex || !c.NoDeploymentCounts {
		t.Fatalf("off switches: %+v %v", c, err)
	}
	env[app.EnvDigestIndex] = "maybe"
	if _, err := app.LoadConfig(func(k string) string { return env[k] }); err == nil {
		t.Fatal("an invalid switch value must be rejected")
	}
}
