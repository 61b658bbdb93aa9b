package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stela-dev/stela/bench"
	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/sqlite"
)

// startDevInProcess runs `stela dev` (Main, as the binary does) on a fresh
// data directory and a free port, and returns its URL and banner once it
// serves; the server stops at cleanup.
func startDevInProcess(t *testing.T, extra ...string) (url, banner string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	args := append([]string{"dev", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--log-level", "warn"}, extra...)
	exited := make(chan int, 1)
	go func() {
		exited <- Main(ctx, args, Env{Stdout: pw, Stderr: io.Discard, Getenv: func(string) string { return "" }})
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		go func() { _, _ = io.Copy(io.Discard, pr) }()
		if code := <-exited; code != ExitOK {
			t.Errorf("stela dev exited with %d", code)
		}
	})
	return waitForBanner(t, pr)
}

// waitForBanner reads `stela dev`'s output until its banner is complete,
// then discards the rest; it returns the server's URL and the banner.
func waitForBanner(t *testing.T, r io.Reader) (url, banner string) {
	t.Helper()
	sc := bufio.NewScanner(r)
	var b strings.Builder
	for sc.Scan() {
		line := sc.Text()
		b.WriteString(line + "\n")
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "API:"); ok {
			url = strings.Fields(rest)[0]
		}
		if strings.HasPrefix(line, "Press Ctrl-C") {
			go func() { _, _ = io.Copy(io.Discard, r) }()
			return url, b.String()
		}
	}
	t.Fatalf("stela dev stopped before serving:\n%s", b.String())
	return "", ""
}

// TestDevDurability proves the mode `stela dev` runs its store at: fsync
// (PRAGMA synchronous=FULL on the writer connection) unless the weaker mode
// is asked for by name. Both the banner and GET /debug/stela/stats report
// the mode read back from the writer connection.
func TestDevDurability(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		want  sqlite.Durability
	}{
		{"DefaultIsFsync", nil, sqlite.DurabilityFsync},
		{"FsyncByName", []string{"--durability", "fsync"}, sqlite.DurabilityFsync},
		{"OSCrashUnsafeByName", []string{"--durability", "os-crash-unsafe"}, sqlite.DurabilityOSCrashUnsafe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, banner := startDevInProcess(t, tc.flags...)
			if want := "durability " + describeDurability(tc.want); !strings.Contains(banner, want) {
				t.Errorf("banner does not say %q:\n%s", want, banner)
			}
			var st struct {
				Durability string          `json:"durability"`
				Store      json.RawMessage `json:"store"`
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := client.New(url)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Call(ctx, http.MethodGet, bench.StatsPath, nil, nil, client.JSON)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(resp.Body, &st); err != nil {
				t.Fatal(err)
			}
			if st.Durability != tc.want.String() || len(st.Store) == 0 {
				t.Errorf("stats report durability %q (store %v), want %q", st.Durability, string(st.Store), tc.want)
			}
		})
	}
	t.Run("UnknownModeIsAUsageError", func(t *testing.T) {
		code, _, errOut := run("dev", "--durability", "NORMAL")
		if code != ExitUsage || !strings.Contains(errOut, "os-crash-unsafe") {
			t.Errorf("exit %d, stderr %q; want a usage error naming the modes", code, errOut)
		}
	})
	t.Run("DynamoAcceptsOnlyFsync", func(t *testing.T) {
		code, _, errOut := run("dev", "--backend", "dynamo", "--durability", "os-crash-unsafe")
		if code != ExitUsage || !strings.Contains(errOut, "embedded store only") {
			t.Errorf("exit %d, stderr %q; want a usage error", code, errOut)
		}
	})
}

// TestBenchStoreDurability proves `stela bench embedded` measures its
// store at the durable mode by default.
func TestBenchStoreDurability(t *testing.T) {
	// The command's default is the durable mode (the benchmark refuses to
	// run at another mode than the one asked for: bench's
	// TestBenchStoreDurability).
	code, out, errOut := run("bench", "embedded", "--executions", "20", "--json")
	if code != ExitOK {
		t.Fatalf("bench embedded: exit %d: %s", code, errOut)
	}
	var res struct {
		Cost struct {
			Durability   string `json:"durability"`
			Commits      int64  `json:"commits"`
			Transactions int64  `json:"write_transactions"`
		} `json:"cost"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Cost.Durability != sqlite.DurabilityFsyncName || res.Cost.Commits == 0 || res.Cost.Transactions == 0 {
		t.Errorf("bench embedded measured %+v, want durability fsync with commits", res.Cost)
	}
}
