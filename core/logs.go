package core

import "math"

// LogLevel is 1 trace … 5 error.
type LogLevel uint8

// Log levels.
const (
	LogTrace LogLevel = iota + 1
	LogDebug
	LogInfo
	LogWarn
	LogError
)

// LogStreamType is 1 stdout, 2 stderr.
type LogStreamType uint8

// Stream types.
const (
	StreamStdout LogStreamType = iota + 1
	StreamStderr
)

// LogEntry is a log line (Level set) or a stream chunk (StreamType set).
type LogEntry struct {
	CreatedAt  Timestamp
	Level      LogLevel
	Message    string
	StreamType LogStreamType
	Payload    []byte
}

// IsStream reports whether the entry is a stream chunk.
func (e LogEntry) IsStream() bool { return e.StreamType != 0 }

// LogInfoAppendRow is a log to append.
type LogInfoAppendRow struct {
	ExecutionID ExecutionId
	RunID       RunId
	Entry       LogEntry
}

// LogCursor is the global, monotonically increasing id of a log row.
type LogCursor int64

// Open-ended log cursors.
const (
	LogCursorMin LogCursor = math.MinInt64
	LogCursorMax LogCursor = math.MaxInt64
)

// LogEntryRow is a stored log.
type LogEntryRow struct {
	Cursor      LogCursor
	RunID       RunId
	Entry       LogEntry
	ExecutionID ExecutionId
}

// LogFilter selects logs and/or streams (seed LogFilter).
type LogFilter struct {
	ShowLogs    bool
	ShowStreams bool
	// Levels applies when ShowLogs; empty = all.
	Levels []LogLevel
	// StreamTypes applies when ShowStreams; empty = both.
	StreamTypes []LogStreamType
	// CreatedAfter / CreatedBefore are exclusive bounds.
	CreatedAfter  *Timestamp
	CreatedBefore *Timestamp
}

// Matches applies the filter to an entry.
func (f *LogFilter) Matches(e *LogEntry) bool {
	if f.CreatedAfter != nil && !e.CreatedAt.After(*f.CreatedAfter) {
		return false
	}
	if f.CreatedBefore != nil && !e.CreatedAt.Before(*f.CreatedBefore) {
		return false
	}
	if e.IsStream() {
		if !f.ShowStreams {
			return false
		}
		if len(f.StreamTypes) == 0 {
			return true
		}
		for _, t := range f.StreamTypes {
			if t == e.StreamType {
				return true
			}
		}
		return false
	}
	if !f.ShowLogs {
		return false
	}
	if len(f.Levels) == 0 {
		return true
	}
	for _, l := range f.Levels {
		if l == e.Level {
			return true
		}
	}
	return false
}

// ListLogsResponse is a page of logs in scan order with the derived cursors.
type ListLogsResponse struct {
	Items    []LogEntryRow
	NextPage Pagination[LogCursor]
	PrevPage *Pagination[LogCursor]
}

// ListLogsFromPage derives next/prev pages as the seed does (docs/spec/semantics.md §6.8).
func ListLogsFromPage(items []LogEntryRow, req Pagination[LogCursor]) ListLogsResponse {
	out := ListLogsResponse{Items: items}
	if len(items) > 0 {
		out.NextPage = Pagination[LogCursor]{Direction: NewerThan, Length: req.Length, Cursor: items[len(items)-1].Cursor}
		out.PrevPage = &Pagination[LogCursor]{Direction: OlderThan, Length: req.Length, Cursor: items[0].Cursor}
		return out
	}
	if req.Direction == NewerThan {
		out.NextPage = req
		if req.Cursor != LogCursorMin {
			inv := req.Invert()
			out.PrevPage = &inv
		}
		return out
	}
	out.NextPage = Pagination[LogCursor]{Direction: NewerThan, Length: req.Length, Cursor: LogCursorMin}
	return out
}
