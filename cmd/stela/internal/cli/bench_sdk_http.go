package cli

import (
	"errors"
	"log/slog"
	"os"
)

// httpBenchEnv connects the SDK benchmarks to a server over HTTP.
func httpBenchEnv(url, token string) (*benchEnv, error) {
	_, _ = url, token
	return nil, errors.New("bench: the HTTP transport of the SDK needs package client (use --embedded)")
}

// quietLogger keeps the workers' logs to errors, on stderr.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}
