package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// Plain-text renderings (Accept: text/plain). They follow Obelisk's layouts
// where Obelisk's web API documents them; event and response descriptions are the
// compact JSON of the payload instead of Obelisk's Display impls.

func lines(n int, line func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(line(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func executionsText(list []core.ExecutionWithState) string {
	return lines(len(list), func(i int) string {
		e := list[i]
		return fmt.Sprintf("%s `%s` %s `%s`", e.ExecutionID, e.PendingState.String(), e.FFQN, e.FirstScheduledAt)
	})
}

func compactJSON(v any) string {
	b, err := core.MarshalJSON(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

func eventsText(events []core.ExecutionEvent) string {
	return lines(len(events), func(i int) string {
		e := events[i]
		b, err := core.EncodeExecutionRequest(e.Event)
		desc := string(b)
		if err != nil {
			desc = fmt.Sprintf("<%v>", err)
		}
		return fmt.Sprintf("%d `%s` %s", e.Version, e.CreatedAt, desc)
	})
}

func responsesText(rs []core.ResponseWithCursor) string {
	return lines(len(rs), func(i int) string {
		r := rs[i]
		var inner struct {
			Event json.RawMessage `json:"event"`
		}
		desc := compactJSON(r.Event.Event)
		if json.Unmarshal([]byte(desc), &inner) == nil && inner.Event != nil {
			desc = string(inner.Event)
		}
		return fmt.Sprintf("%d `%s` %s %s", r.Cursor, r.Event.CreatedAt, r.Event.Event.JoinSetID, desc)
	})
}

func logsText(rows []core.LogEntryRow, showRunID, showExecutionID bool) string {
	return lines(len(rows), func(i int) string {
		row := rows[i]
		var b strings.Builder
		b.WriteString(row.Entry.CreatedAt.SortableText())
		name, _ := wire.LogLevelName(row.Entry.Level)
		level, msg := strings.ToUpper(name), row.Entry.Message
		if row.Entry.IsStream() {
			name, _ = wire.StreamTypeName(row.Entry.StreamType)
			level, msg = strings.ToUpper(name), strings.ToValidUTF8(string(row.Entry.Payload), "\uFFFD")
		}
		fmt.Fprintf(&b, " [%-6s] ", level)
		if showRunID {
			fmt.Fprintf(&b, "[%s] ", row.RunID)
		}
		if showExecutionID {
			fmt.Fprintf(&b, "[%s] ", row.ExecutionID)
		}
		b.WriteString(strings.TrimRight(msg, "\n"))
		return b.String()
	})
}

func backtraceText(bt core.BacktraceInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "execution_id: %s\ncomponent_id: %s\nversion: %d..%d\n",
		bt.ExecutionID, bt.ComponentID, bt.VersionMinIncluding, bt.VersionMaxExcluding)
	for _, f := range bt.WasmBacktrace.Frames {
		fmt.Fprintf(&b, "  %s:%s\n", f.Module, f.FuncName)
		for _, s := range f.Symbols {
			fmt.Fprintf(&b, "    %s (%s:%s:%s)\n", deref(s.FuncName, "?"), deref(s.File, "?"), derefNum(s.Line), derefNum(s.Col))
		}
	}
	return b.String()
}

func deref(s *string, def string) string {
	if s == nil {
		return def
	}
	return *s
}

func derefNum(n *uint32) string {
	if n == nil {
		return "?"
	}
	return fmt.Sprint(*n)
}

func deploymentsText(ds []wire.DeploymentStateJSON) string {
	return lines(len(ds), func(i int) string {
		d := ds[i]
		return fmt.Sprintf("%s locked=%d pending=%d scheduled=%d blocked=%d paused=%d cancelling=%d finished_ok=%d finished_error=%d finished_execution_failure=%d",
			d.DeploymentID, d.Locked, d.Pending, d.Scheduled, d.Blocked, d.Paused, d.Cancelling, d.FinishedOk, d.FinishedError, d.FinishedExecutionFailure)
	})
}

func deploymentText(d wire.DeploymentJSON) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s status=%s digest=%s created_at=%s\n", d.DeploymentID, d.Status, d.Digest, d.CreatedAt)
	for _, f := range d.Files {
		fmt.Fprintf(&b, "file path=%s digest=%s size=%d\n", f.Path, f.Digest, f.Size)
	}
	return b.String()
}

func componentsText(cs []wire.ComponentJSON) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%s:%s %s\n", c.ComponentID.ComponentType, c.ComponentID.Name, c.ComponentID.ComponentDigest)
		for _, sec := range []struct {
			name string
			fns  *[]wire.FunctionJSON
		}{{"exports", c.Exports}, {"imports", c.Imports}} {
			if sec.fns == nil {
				continue
			}
			fmt.Fprintf(&b, "  %s:\n", sec.name)
			for _, f := range *sec.fns {
				fmt.Fprintf(&b, "    %s -> %s\n", f.FFQN, f.ReturnType)
			}
		}
		if len(c.Files) > 0 {
			b.WriteString("  files:\n")
			for _, f := range c.Files {
				fmt.Fprintf(&b, "    %s %s %s (%d bytes)\n", f.Role, f.File.Path, f.File.Digest, f.File.Size)
			}
		}
	}
	return b.String()
}
