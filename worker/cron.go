package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/stela-dev/stela/core"
)

// Recurring schedules: a schedule is a durable workflow execution of the
// SDK's function ScheduleFFQN that sleeps until each tick of its cron
// expression and then creates the tick's execution with Schedule. The tick
// is recorded in the schedule's history in the same write that creates it,
// so it runs once however many workers serve the schedule or restart: a
// replay returns the recorded tick. Pausing, unpausing and deleting a
// schedule are the execution's pause, unpause and cancel; listing them is
// listing the executions of ScheduleFFQN.

// ScheduleFFQN is the function of schedule executions (cancellable: a
// cancel deletes the schedule).
const ScheduleFFQN = "stela:sdk/schedule.run-cancellable"

// scheduleRunningFFQN is the activity a schedule with OverlapSkip asks
// whether its previous tick is still running.
const scheduleRunningFFQN = "stela:sdk/schedule.running"

// Overlap policies of a schedule.
const (
	// OverlapSkip skips a tick while the previous tick's execution has
	// not finished (the default).
	OverlapSkip = "skip"
	// OverlapAllow starts every tick, running or not.
	OverlapAllow = "allow"
)

// ScheduleSpec describes a recurring schedule.
type ScheduleSpec struct {
	// Cron is a standard 5-field cron expression ("*/5 * * * *") or a
	// descriptor (@hourly, @daily, @every 10m, …), as
	// github.com/robfig/cron/v3 parses them.
	Cron string `json:"cron"`
	// TimeZone is an IANA name ("Europe/Prague"); empty is UTC.
	TimeZone string `json:"time_zone,omitempty"`
	// FFQN is the function each tick runs, with Params (see Args).
	FFQN   string      `json:"ffqn"`
	Params core.Params `json:"params"`
	// Overlap is OverlapSkip (empty) or OverlapAllow.
	Overlap string `json:"overlap,omitempty"`
}

// Validate checks the spec: a parsable cron expression, a known time zone,
// a function name and an overlap policy.
func (s ScheduleSpec) Validate() error {
	if _, _, err := s.parse(); err != nil {
		return err
	}
	if _, err := core.ParseFunctionFqn(s.FFQN); err != nil {
		return fmt.Errorf("worker: schedule ffqn: %w", err)
	}
	if s.Overlap != "" && s.Overlap != OverlapSkip && s.Overlap != OverlapAllow {
		return fmt.Errorf("worker: schedule overlap %q: want skip or allow", s.Overlap)
	}
	return nil
}

func (s ScheduleSpec) parse() (cron.Schedule, *time.Location, error) {
	sched, err := cron.ParseStandard(s.Cron)
	if err != nil {
		return nil, nil, fmt.Errorf("worker: schedule cron %q: %w", s.Cron, err)
	}
	loc, err := time.LoadLocation(s.TimeZone)
	if err != nil {
		return nil, nil, fmt.Errorf("worker: schedule time zone %q: %w", s.TimeZone, err)
	}
	return sched, loc, nil
}

// ScheduleTick is what a schedule publishes under the state key "last-tick".
type ScheduleTick struct {
	At          time.Time        `json:"at"`
	ExecutionID core.ExecutionId `json:"execution_id"`
	Skipped     bool             `json:"skipped,omitempty"`
}

// RegisterSchedules registers the schedule workflow (ScheduleFFQN) and its
// helper activity on w; a worker serving schedules must also be able to
// create the ticks' functions (register or Declare them).
func RegisterSchedules(w *Worker) {
	Workflow(w, ScheduleFFQN, runSchedule)
	Activity(w, scheduleRunningFFQN, func(ctx context.Context, id core.ExecutionId) (bool, error) {
		st, err := w.conn.GetPendingState(ctx, id)
		if errors.Is(err, core.ErrNotFound) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		return st.PendingState.State != core.StateFinished, nil
	})
}

// CreateSchedule validates spec and starts the schedule as an execution of
// ScheduleFFQN through w (which must have RegisterSchedules); the returned
// id is the schedule's, for pausing (Pause), unpausing and deleting
// (Cancel) it.
func CreateSchedule(ctx context.Context, w *Worker, spec ScheduleSpec) (core.ExecutionId, error) {
	if err := spec.Validate(); err != nil {
		return core.ExecutionId{}, err
	}
	return w.Submit(ctx, ScheduleFFQN, spec)
}

// runSchedule is the schedule workflow: forever, sleep until the next tick
// after now (in the spec's time zone), then create the tick's execution,
// unless the previous one still runs and the policy is skip.
func runSchedule(wf *Context, spec ScheduleSpec) (Unit, error) {
	sched, loc, err := spec.parse()
	if err != nil {
		return Unit{}, err
	}
	var last core.ExecutionId
	for {
		at := sched.Next(wf.Now().In(loc))
		if err := wf.SleepUntil(at); err != nil {
			return Unit{}, err
		}
		if spec.Overlap != OverlapAllow && !last.IsZero() {
			running, err := Call[bool](wf, scheduleRunningFFQN, last)
			if err != nil {
				return Unit{}, err
			}
			if running {
				wf.Logger().Info("tick skipped: the previous one still runs", "at", at, "previous", last.String())
				if err := wf.SetState("last-tick", ScheduleTick{At: at, ExecutionID: last, Skipped: true}); err != nil {
					return Unit{}, err
				}
				continue
			}
		}
		id, err := wf.Schedule(spec.FFQN, spec.Params, Now())
		if err != nil {
			return Unit{}, err
		}
		last = id
		if err := wf.SetState("last-tick", ScheduleTick{At: at, ExecutionID: id}); err != nil {
			return Unit{}, err
		}
	}
}
