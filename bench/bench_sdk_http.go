package bench

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/worker"
)

// httpBenchEnv connects the SDK benchmarks to the server at url over
// HTTP. Each connection is a client with its own pool; every byte read
// from the sockets (headers and bodies) is counted.
func httpBenchEnv(url, token string) (*benchEnv, error) {
	var received atomic.Int64
	newConn := func() (worker.Conn, error) {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns, t.MaxIdleConnsPerHost = 1024, 1024
		dialer := &net.Dialer{}
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &countingConn{Conn: c, n: &received}, nil
		}
		return client.New(url, client.WithToken(token), client.WithHTTPClient(&http.Client{Transport: t}))
	}
	stats, err := client.New(url, client.WithToken(token))
	if err != nil {
		return nil, err
	}
	return &benchEnv{conn: newConn, received: received.Load, stats: stats}, nil
}

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// quietLogger keeps the workers' logs to errors, on stderr.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}
