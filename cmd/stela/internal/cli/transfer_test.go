package cli

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stela-dev/stela/cas"
	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/dynamo/dynamoenv"
	"github.com/stela-dev/stela/sqlite"
	"github.com/stela-dev/stela/store"
	"github.com/stela-dev/stela/store/storetest"
)

// runEnv runs the CLI with environment variables.
func runEnv(env map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Main(context.Background(), args, Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }})
	return code, out.String(), errOut.String()
}

// embeddedDataSet writes storetest's data set into a fresh data directory
// as `stela dev` lays it out (stela.db, blobs/), with recent timestamps.
func embeddedDataSet(t *testing.T) (dir string, ds storetest.DataSet) {
	t.Helper()
	dir = t.TempDir()
	b, err := sqlite.Open(filepath.Join(dir, "stela.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := cas.NewDir(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	clock := storetest.NewSimClock(core.TS(time.Now().Add(-time.Hour)))
	svc := store.New(b, store.Options{Clock: clock, Cas: blobs, Retention: core.RetainFor(core.DefaultRetentionPeriod)})
	ds = storetest.BuildDataSet(t, svc, blobs, clock, 1)
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, ds
}

// body is a stream without its header line (which names the source and
// the time of the export).
func body(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n")
	if !ok || !strings.HasPrefix(string(b), `{"header":`) {
		t.Fatalf("%s does not start with a header line", path)
	}
	return rest
}

func itoa(n int) string { return strconv.Itoa(n) }

func mustRun(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	code, out, errOut := runEnv(env, args...)
	if code != ExitOK {
		t.Fatalf("stela %s: exit %d\nstdout %s\nstderr %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// TestExportImportThroughTheCLI: an embedded store goes to a file, into a
// fresh embedded store, and directly into a third; each exports exactly
// the first's stream. Importing again changes nothing, a store changed
// since is reported, not overwritten, and a file cut short imports what
// it holds and finishes when imported whole.
func TestExportImportThroughTheCLI(t *testing.T) {
	src, ds := embeddedDataSet(t)
	tmp := t.TempDir()
	f1 := filepath.Join(tmp, "one.jsonl")
	out := mustRun(t, nil, "export", "--from", "embedded:"+src, "--to", f1)
	if !strings.Contains(out, "exported "+itoa(len(ds.IDs))+" executions") || !strings.Contains(out, "executions were locked") {
		t.Fatalf("export output:\n%s", out)
	}
	if _, err := os.Stat(f1 + ".partial"); !os.IsNotExist(err) {
		t.Fatalf("the export left its partial file: %v", err)
	}

	dst := filepath.Join(tmp, "two")
	out = mustRun(t, nil, "import", "--from", f1, "--to", "embedded:"+dst)
	if !strings.Contains(out, "imported "+itoa(len(ds.IDs))+" executions") || !strings.Contains(out, " 0 resumed") {
		t.Fatalf("import output:\n%s", out)
	}
	f2 := filepath.Join(tmp, "two.jsonl")
	mustRun(t, nil, "export", "--from", "embedded:"+dst, "--to", f2)
	if body(t, f2) != body(t, f1) {
		t.Fatal("the imported store exports another stream than its source")
	}
	out = mustRun(t, nil, "import", "--from", f1, "--to", "embedded:"+dst)
	if !strings.Contains(out, "trees: 0 written, 0 resumed (completed), ") {
		t.Fatalf("importing again wrote something:\n%s", out)
	}

	third := filepath.Join(tmp, "three")
	mustRun(t, nil, "export", "--from", "embedded:"+dst, "--to", "embedded:"+third, "--durability", "os-crash-unsafe")
	f3 := filepath.Join(tmp, "three.jsonl")
	mustRun(t, nil, "export", "--from", "embedded:"+third, "--to", f3)
	if body(t, f3) != body(t, f1) {
		t.Fatal("the directly copied store exports another stream than its source")
	}
	code, stdout, _ := runEnv(nil, "export", "--from", "embedded:"+third, "--to", "-")
	if code != ExitOK || strings.SplitN(stdout, "\n", 2)[1] != body(t, f1) {
		t.Fatalf("export to stdout: exit %d, not the same stream", code)
	}

	// The destination moved on: an execution paused there.
	b, err := sqlite.Open(filepath.Join(third, "stela.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := store.New(b, store.Options{})
	victim := ds.Waiting
	if _, err := svc.PauseExecution(context.Background(), victim, core.TS(time.Now())); err != nil {
		t.Fatal(err)
	}
	_ = svc.Close()
	code, stdout, stderr := runEnv(nil, "import", "--from", f1, "--to", "embedded:"+third)
	if code != ExitError || !strings.Contains(stdout, "conflict: execution "+victim.String()) || !strings.Contains(stderr, "not overwritten") {
		t.Fatalf("import over a changed store: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}

	// A file cut short, then the whole file.
	whole, err := os.ReadFile(f1)
	if err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(tmp, "half.jsonl")
	if err := os.WriteFile(half, whole[:len(whole)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	fourth := filepath.Join(tmp, "four")
	code, stdout, stderr = runEnv(nil, "import", "--from", half, "--to", "embedded:"+fourth)
	if code != ExitError || !strings.Contains(stderr, "import a complete export again") {
		t.Fatalf("import of half a file: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	mustRun(t, nil, "import", "--from", f1, "--to", "embedded:"+fourth)
	f4 := filepath.Join(tmp, "four.jsonl")
	mustRun(t, nil, "export", "--from", "embedded:"+fourth, "--to", f4)
	if body(t, f4) != body(t, f1) {
		t.Fatal("the store resumed from half a file exports another stream than its source")
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export", "--from", "embedded:" + filepath.Join(tmp, "none"), "--to", filepath.Join(tmp, "x.jsonl")}, ExitError, "no embedded store"},
		{[]string{"export", "--from", "embedded:" + src}, ExitUsage, "--to is required"},
		{[]string{"import", "--to", "embedded:" + src}, ExitUsage, "--from is required"},
		{[]string{"import", "--from", f1, "--to", f2}, ExitUsage, "both files"},
		{[]string{"import", "--from", f1, "--to", "dynamo:t?colour=red"}, ExitUsage, "unknown parameter"},
	} {
		code, _, stderr := runEnv(nil, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("stela %s: exit %d, stderr %q; want %d with %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
	}
}

// TestExportToDynamoAndBackThroughTheCLI is the laptop-to-AWS path on
// DynamoDB Local and the S3 emulator: embedded → DynamoDB directly, then
// DynamoDB → file holds the same executions and logs as the embedded
// store's own export.
func TestExportToDynamoAndBackThroughTheCLI(t *testing.T) {
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" || os.Getenv("AWS_ENDPOINT_URL_S3") == "" {
		const how = "no DynamoDB or S3 endpoint: source /work/tools-shared/env.sh (or scripts/test-all's emulators)"
		if os.Getenv("CI") == "true" {
			t.Fatal(how)
		}
		t.Skip(how)
	}
	src, ds := embeddedDataSet(t)
	var buf [4]byte
	_, _ = crand.Read(buf[:])
	table := "stela-cli-" + hex.EncodeToString(buf[:])
	env := map[string]string{"STELA_BUCKET": table, "STELA_BUCKET_PREFIX": "cas/"}
	t.Cleanup(func() {
		client, err := dynamoenv.NewClient(context.Background())
		if err == nil {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
		}
	})
	tmp := t.TempDir()
	f1 := filepath.Join(tmp, "embedded.jsonl")
	mustRun(t, nil, "export", "--from", "embedded:"+src, "--to", f1)
	out := mustRun(t, env, "export", "--from", "embedded:"+src, "--to", "dynamo:"+table)
	if !strings.Contains(out, "copied "+itoa(len(ds.IDs))+" executions") {
		t.Fatalf("copy to DynamoDB:\n%s", out)
	}
	f2 := filepath.Join(tmp, "dynamo.jsonl")
	mustRun(t, env, "export", "--from", "dynamo:"+table, "--to", f2)
	// DynamoDB orders trees and ties by (created_at, id): the same lines,
	// maybe in another order (and so another stream digest in the end record).
	a, b := strings.Split(body(t, f1), "\n"), strings.Split(body(t, f2), "\n")
	a = slices.DeleteFunc(a, func(l string) bool { return strings.HasPrefix(l, `{"end":`) })
	b = slices.DeleteFunc(b, func(l string) bool { return strings.HasPrefix(l, `{"end":`) })
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		for _, l := range a {
			if !slices.Contains(b, l) {
				t.Logf("only in the embedded export: %.600s", l)
			}
		}
		for _, l := range b {
			if !slices.Contains(a, l) {
				t.Logf("only in the DynamoDB export: %.600s", l)
			}
		}
		t.Fatal("the DynamoDB copy exports other records than the embedded store")
	}
	out = mustRun(t, env, "import", "--from", f1, "--to", "dynamo:"+table)
	if !strings.Contains(out, "trees: 0 written, 0 resumed (completed), ") {
		t.Fatalf("importing the same records into DynamoDB again wrote something:\n%s", out)
	}
}

// TestBackupWhileDevRuns: `stela backup` copies a data directory that
// `stela dev` is serving and writing; the copy is a data directory of its
// own that holds what was acknowledged before the backup.
func TestBackupWhileDevRuns(t *testing.T) {
	src, ds := embeddedDataSet(t)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	exited := make(chan int, 1)
	go func() {
		exited <- Main(ctx, []string{"dev", "--data-dir", src, "--addr", "127.0.0.1:0", "--log-level", "error"},
			Env{Stdout: pw, Stderr: io.Discard, Getenv: func(string) string { return "" }})
		pw.Close()
	}()
	url, _ := waitForBanner(t, pr)
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	// A write acknowledged before the backup, then writes during it.
	ffqn, _ := core.ParseFunctionFqn("demo:hello/greeter.greet")
	submit := func() core.ExecutionId {
		id, err := core.NewExecutionId(uint64(time.Now().UnixMilli()), crand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		now := core.TS(time.Now())
		if _, err := c.Create(context.Background(), core.CreateRequest{CreatedAt: now, ExecutionID: id, FFQN: ffqn,
			Params: core.Params{}, ScheduledAt: now, ComponentID: core.ComponentId{ComponentType: core.ComponentTypeActivity}}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	acked := submit()
	done := make(chan struct{})
	writing := make(chan struct{})
	go func() {
		defer close(writing)
		for {
			select {
			case <-done:
				return
			default:
				submit()
			}
		}
	}()
	to := filepath.Join(t.TempDir(), "copy")
	out := mustRun(t, nil, "backup", "--data-dir", src, "--to", to)
	close(done)
	<-writing
	cancel()
	if code := <-exited; code != ExitOK {
		t.Fatalf("stela dev exited with %d", code)
	}
	if !strings.Contains(out, "backed up") || !strings.Contains(out, "2 blobs") {
		t.Fatalf("backup output: %s", out)
	}
	// The copy opens as a data directory and holds the data set and the
	// acknowledged write.
	f := filepath.Join(t.TempDir(), "copy.jsonl")
	out = mustRun(t, nil, "export", "--from", "embedded:"+to, "--to", f)
	if !strings.Contains(out, "2 blobs") {
		t.Fatalf("export of the copy: %s", out)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range append([]core.ExecutionId{acked}, ds.IDs...) {
		if !bytes.Contains(b, []byte(`{"execution":{"execution_id":"`+id.String()+`"`)) {
			t.Fatalf("the copy lacks %s", id)
		}
	}
	code, _, stderr := runEnv(nil, "backup", "--data-dir", src, "--to", to)
	if code != ExitError || !strings.Contains(stderr, "not empty") {
		t.Fatalf("backup into a non-empty directory: exit %d, %s", code, stderr)
	}
}
