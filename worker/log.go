package worker

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/stela-dev/stela/core"
)

// Execution logs: a slog.Handler that writes each record as an Obelisk log
// entry (level kept) of the running execution, the entries the console's
// Logs section and `stela execution logs` show.

// Logger returns a logger writing into the execution log of the activity
// whose context ctx is (the context the worker passes to an activity
// function); outside an activity it returns a logger that discards.
//
//	worker.Activity(w, "demo:shop/payments.charge", func(ctx context.Context, o Order) (string, error) {
//		worker.Logger(ctx).Info("charging", "order", o.ID, "amount", o.Amount)
//		// …
//	})
//
// Each record is one row: level (trace < debug ≤ … , debug, info, warn,
// error), the message followed by its attributes as key=value, the run's
// id. Rows are written synchronously, one request per record (errors are
// dropped: logs are fire-and-forget).
func Logger(ctx context.Context) *slog.Logger {
	if h, ok := ctx.Value(execLogKey{}).(*execLogHandler); ok {
		return slog.New(h)
	}
	return slog.New(slog.DiscardHandler)
}

// Logger returns a logger writing into the workflow's execution log. A
// record is written only when the workflow is not replaying (Context
// IsReplaying), so a replay logs nothing twice.
//
//	wf.Logger().Info("waiting for approval", "order", id)
func (wf *Context) Logger() *slog.Logger {
	return slog.New(&execLogHandler{w: wf.w, id: wf.id, run: wf.l.locked.RunID, wf: wf})
}

type execLogKey struct{}

func withExecutionLog(ctx context.Context, w *Worker, le core.LockedExecution) context.Context {
	return context.WithValue(ctx, execLogKey{}, &execLogHandler{w: w, id: le.ExecutionID, run: le.LockedEvent.RunID})
}

// execLogHandler is the slog.Handler of Logger.
type execLogHandler struct {
	w      *Worker
	id     core.ExecutionId
	run    core.RunId
	wf     *Context // set for a workflow: nothing is written while it replays
	attrs  []slog.Attr
	groups string
}

func (h *execLogHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *execLogHandler) Handle(_ context.Context, r slog.Record) error {
	if h.wf != nil {
		h.wf.l.mu.Lock()
		replaying, cancelled := h.wf.replaying(), h.wf.cancelled
		h.wf.l.mu.Unlock()
		if replaying || cancelled {
			return nil
		}
	}
	var b strings.Builder
	b.WriteString(r.Message)
	write := func(a slog.Attr, prefix string) {
		if a.Equal(slog.Attr{}) {
			return
		}
		fmt.Fprintf(&b, " %s%s=%v", prefix, a.Key, a.Value.Resolve())
	}
	for _, a := range h.attrs {
		write(a, "")
	}
	r.Attrs(func(a slog.Attr) bool {
		write(a, h.groups)
		return true
	})
	msg := b.String()
	if len(msg) > maxLogMessage {
		msg = strings.ToValidUTF8(msg[:maxLogMessage], "")
	}
	row := core.LogInfoAppendRow{ExecutionID: h.id, RunID: h.run,
		Entry: core.LogEntry{CreatedAt: h.w.clock.Now(), Level: logLevel(r.Level), Message: msg}}
	ctx, cancel := h.w.ioContext()
	defer cancel()
	if err := h.w.conn.AppendLogBatch(ctx, []core.LogInfoAppendRow{row}); err != nil {
		h.w.log.Debug("execution log not written", "execution_id", h.id.String(), "err", err)
	}
	return nil
}

// maxLogMessage is the server's bound on a log message (wire/limits.go).
const maxLogMessage = 64 << 10

func (h *execLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(c.attrs[:len(c.attrs):len(c.attrs)], qualify(as, h.groups)...)
	return &c
}

func (h *execLogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.groups += name + "."
	return &c
}

func qualify(as []slog.Attr, prefix string) []slog.Attr {
	if prefix == "" {
		return as
	}
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = slog.Attr{Key: prefix + a.Key, Value: a.Value}
	}
	return out
}

// logLevel maps slog's levels to Obelisk's five.
func logLevel(l slog.Level) core.LogLevel {
	switch {
	case l < slog.LevelDebug:
		return core.LogTrace
	case l < slog.LevelInfo:
		return core.LogDebug
	case l < slog.LevelWarn:
		return core.LogInfo
	case l < slog.LevelError:
		return core.LogWarn
	}
	return core.LogError
}
