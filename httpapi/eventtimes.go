package httpapi

import (
	"fmt"
	"time"

	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/wire"
)

// Event times on the worker routes (docs/http-api.md §1, "Event times").
//
// A worker stamps the events it writes with its own clock: created_at of a
// lock, of appended events, of executions it creates, of responses and of
// log rows, and the current_time of a batch. The server keeps them (Obelisk's
// executors write their own times too), but only from MaxEventAge behind its
// own clock to MaxClockSkew ahead of it: a time beyond is a worker with a
// wrong clock or a hard-coded date, and would make the console's durations
// and the order of the log meaningless (an execution "finished −334 days
// after" it started). The past gets more room than the future: a worker
// sends events it buffered (a workflow's history until it awaits) or
// retries, stamped when they happened.
// The check runs after decoding, before anything is read or written; a
// many-write is refused whole.

// timeBound checks event times against one reading of the server's clock.
type timeBound struct {
	now    core.Timestamp
	ahead  time.Duration // < 0: unbounded
	behind time.Duration // < 0: unbounded
}

func (s *server) timeBound() timeBound {
	return timeBound{now: s.now(), ahead: s.maxSkew, behind: s.maxEventAge}
}

// check answers 400 naming path when t is more than ahead after now or more
// than behind before it.
func (b timeBound) check(path string, t core.Timestamp) error {
	d := t.Sub(b.now.Time)
	switch {
	case b.ahead >= 0 && d > b.ahead:
		return badRequest("`%s` %s is %s ahead of the server's clock (%s): event times may be at most %s ahead of it and %s behind",
			path, t, roughly(d), b.now, b.ahead, b.behindText())
	case b.behind >= 0 && d < -b.behind:
		return badRequest("`%s` %s is %s behind the server's clock (%s): event times may be at most %s behind it and %s ahead",
			path, t, roughly(-d), b.now, b.behind, b.aheadText())
	}
	return nil
}

func (b timeBound) aheadText() string { return boundText(b.ahead) }

func (b timeBound) behindText() string { return boundText(b.behind) }

func boundText(d time.Duration) string {
	if d < 0 {
		return "any time"
	}
	return d.String()
}

func (b timeBound) checkPtr(path string, t *core.Timestamp) error {
	if t == nil {
		return nil
	}
	return b.check(path, *t)
}

// roughly renders a positive duration for a person: days beyond a day.
func roughly(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.Round(time.Second).String()
}

func (b timeBound) requests(path string, reqs []core.AppendRequest) error {
	for i := range reqs {
		if err := b.check(fmt.Sprintf("%s[%d].created_at", path, i), reqs[i].CreatedAt); err != nil {
			return err
		}
	}
	return nil
}

func (b timeBound) lock(p *wire.LockParams) error { return b.checkPtr("created_at", p.CreatedAt) }

func (b timeBound) appendBatch(prefix string, a *wire.AppendBatchBody) error {
	if err := b.checkPtr(prefix+"current_time", a.CurrentTime); err != nil {
		return err
	}
	return b.requests(prefix+"batch", a.Batch)
}

func (b timeBound) creates(path string, cs []core.CreateRequest) error {
	for i := range cs {
		if err := b.check(fmt.Sprintf("%s[%d].created_at", path, i), cs[i].CreatedAt); err != nil {
			return err
		}
	}
	return nil
}

func (b timeBound) respondToParent(prefix string, r *wire.RespondToParentBody) error {
	if err := b.checkPtr(prefix+"current_time", r.CurrentTime); err != nil {
		return err
	}
	if err := b.requests(prefix+"events.batch", r.Events.Batch); err != nil {
		return err
	}
	return b.check(prefix+"response.created_at", r.Response.CreatedAt)
}

func (b timeBound) many(m *wire.AppendManyBody) error {
	for i := range m.Items {
		it := &m.Items[i]
		if it.Append != nil {
			if err := b.appendBatch(fmt.Sprintf("items[%d].append.", i), it.Append); err != nil {
				return err
			}
		}
		if it.RespondToParent != nil {
			if err := b.respondToParent(fmt.Sprintf("items[%d].respond_to_parent.", i), it.RespondToParent); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b timeBound) stub(s *wire.StubResponseBody) error {
	if err := b.checkPtr("current_time", s.CurrentTime); err != nil {
		return err
	}
	if err := b.check("req.created_at", s.Req.CreatedAt); err != nil {
		return err
	}
	return b.check("response.created_at", s.Response.CreatedAt)
}

func (b timeBound) logs(l *wire.AppendLogsBody) error {
	for i := range l.Logs {
		if err := b.check(fmt.Sprintf("logs[%d].created_at", i), l.Logs[i].CreatedAt); err != nil {
			return err
		}
	}
	return nil
}
