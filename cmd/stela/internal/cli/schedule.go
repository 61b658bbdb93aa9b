package cli

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/worker"
)

// scheduleCommand operates recurring schedules (worker.ScheduleSpec): a
// schedule is an execution of worker.ScheduleFFQN, served by a worker that
// called worker.RegisterSchedules.
func scheduleCommand() *command {
	return &command{
		name:    "schedule",
		summary: "create, list, pause, unpause and delete recurring (cron) schedules",
		doc: "stela schedule: recurring schedules. A schedule is an execution of " + worker.ScheduleFFQN + ",\n" +
			"run by a worker that called worker.RegisterSchedules; each tick creates an execution of its function.",
		sub: []*command{
			scheduleCreateCommand(),
			{
				name: "list", summary: "list the schedules, newest first", maxArgs: 0,
				flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
					cf := addClientFlags(fs, e)
					all := fs.Bool("all", false, "include deleted (finished) schedules")
					asJSON := fs.Bool("json", false, "print JSON")
					return func(ctx context.Context, _ []string) error {
						q := url.Values{"length": {strconv.Itoa(100)}, "ffqn_prefix": {worker.ScheduleFFQN}}
						if !*all {
							q.Set("hide_finished", "true")
						}
						return cf.printList(ctx, e, "/v1/executions", q, *asJSON, "no schedules")
					}
				},
			},
			simplePut("pause", "pause a schedule (no ticks until unpaused)", "<schedule-id>", "pause"),
			simplePut("unpause", "unpause a schedule (a missed tick runs once, late)", "<schedule-id>", "unpause"),
			simplePut("delete", "delete a schedule (cancels its execution; running ticks go on)", "<schedule-id>", "cancel"),
		},
	}
}

func scheduleCreateCommand() *command {
	return &command{
		name: "create", summary: "create a schedule running <ffqn> on a cron expression", args: "<cron> <ffqn> [params-json]", minArgs: 2, maxArgs: 3,
		doc: "cron is 5 fields (\"*/5 * * * *\") or a descriptor (@hourly, @daily, @every 10m). Prints the schedule's id.\n\n" +
			"Example:\n  stela schedule create --time-zone Europe/Prague '0 9 * * 1-5' demo:hello/greeter.greet '[\"team\"]'",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			cf := addClientFlags(fs, e)
			tz := fs.String("time-zone", "", "IANA time zone of the cron expression (default UTC)")
			overlap := fs.String("overlap", worker.OverlapSkip, "skip a tick while the previous one runs (skip) or not (allow)")
			return func(ctx context.Context, args []string) error {
				spec := worker.ScheduleSpec{Cron: args[0], TimeZone: *tz, FFQN: args[1], Params: core.Params{}, Overlap: *overlap}
				if len(args) == 3 {
					if err := json.Unmarshal([]byte(args[2]), &spec.Params); err != nil {
						return usagef("params must be a JSON array, e.g. '[1, \"two\"]': %v", err)
					}
				}
				if err := spec.Validate(); err != nil {
					return usagef("%v", err)
				}
				raw, err := json.Marshal(spec)
				if err != nil {
					return err
				}
				id, err := core.NewExecutionId(uint64(time.Now().UnixMilli()), rand.Reader)
				if err != nil {
					return err
				}
				c, err := cf.client()
				if err != nil {
					return err
				}
				ffqn, _ := core.ParseFunctionFqn(worker.ScheduleFFQN)
				body := client.SubmitRequest{FFQN: ffqn, Params: core.Params{raw}, ComponentType: core.ComponentTypeWorkflow}
				if _, err := c.Call(ctx, http.MethodPut, client.ExecPath(id.String(), ""), nil, body, client.JSON); err != nil {
					return err
				}
				_, err = fmt.Fprintln(e.Stdout, id)
				return err
			}
		},
	}
}
