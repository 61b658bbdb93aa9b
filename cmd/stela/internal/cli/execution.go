package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/stela-dev/stela/client"
	"github.com/stela-dev/stela/client/sigv4"
	"github.com/stela-dev/stela/core"
	"github.com/stela-dev/stela/store"
)

// Defaults of the client commands.
const (
	defaultURL          = "http://127.0.0.1:8080"
	envURL              = "STELA_URL"
	envToken            = "STELA_API_TOKEN"
	defaultPollInterval = time.Second
)

// clientFlags are the flags of every command that calls the HTTP API.
type clientFlags struct {
	url, token string
	// auth is "", "none", "token" or "sigv4"; region and profile
	// configure sigv4.
	auth, region, profile string
}

// envAuth is the default of --auth.
const envAuth = "STELA_AUTH"

func addClientFlags(fs *flag.FlagSet, e *Env) *clientFlags {
	cf := &clientFlags{}
	def := e.Getenv(envURL)
	if def == "" {
		def = defaultURL
	}
	fs.StringVar(&cf.url, "url", def, "server URL ($"+envURL+", else "+defaultURL+")")
	fs.StringVar(&cf.token, "token", e.Getenv(envToken), "API bearer token, e.g. a JWT for a stack with a JWT authorizer ($"+envToken+")")
	fs.StringVar(&cf.auth, "auth", e.Getenv(envAuth), "how to authenticate: token (--token as a bearer token), sigv4 (AWS Signature V4 from the\n"+
		"standard AWS credential chain, for a deployed stack with IAM auth), none; default token with\n"+
		"--token, else none ($"+envAuth+")")
	fs.StringVar(&cf.region, "aws-region", "", "AWS region for --auth sigv4 (default: the region of an execute-api --url, else the AWS configuration's)")
	fs.StringVar(&cf.profile, "aws-profile", "", "AWS shared-config profile for --auth sigv4 (default $AWS_PROFILE, else the default chain)")
	return cf
}

// options returns the client options of the flags: the authentication.
func (cf *clientFlags) options() ([]client.Option, error) {
	auth := cf.auth
	if auth == "" {
		auth = "none"
		if cf.token != "" {
			auth = "token"
		}
	}
	switch auth {
	case "none":
		return nil, nil
	case "token":
		if cf.token == "" {
			return nil, usagef("--auth token needs --token (or $%s)", envToken)
		}
		return []client.Option{client.WithToken(cf.token)}, nil
	case "sigv4":
		if cf.token != "" {
			return nil, usagef("--auth sigv4 signs every request: drop --token")
		}
		region := cf.region
		if region == "" {
			region = executeAPIRegion(cf.url)
		}
		opts := []func(*config.LoadOptions) error{}
		if region != "" {
			opts = append(opts, config.WithRegion(region))
		}
		if cf.profile != "" {
			opts = append(opts, config.WithSharedConfigProfile(cf.profile))
		}
		cfg, err := config.LoadDefaultConfig(context.Background(), opts...)
		if err != nil {
			return nil, fmt.Errorf("--auth sigv4: load the AWS configuration: %w", err)
		}
		if cfg.Region == "" {
			return nil, usagef("--auth sigv4 needs a region: --aws-region, an execute-api --url or the AWS configuration")
		}
		return []client.Option{sigv4.With(cfg, cfg.Region)}, nil
	default:
		return nil, usagef("--auth must be token, sigv4 or none, got %q", auth)
	}
}

// executeAPIRegion returns the region of an API Gateway URL
// (https://<id>.execute-api.<region>.amazonaws.com/...), else "".
func executeAPIRegion(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	labels := strings.Split(u.Hostname(), ".")
	for i, l := range labels {
		if l == "execute-api" && i+1 < len(labels) {
			return labels[i+1]
		}
	}
	return ""
}

func (cf *clientFlags) client(extra ...client.Option) (*client.Client, error) {
	opts, err := cf.options()
	if err != nil {
		return nil, err
	}
	// A person is waiting: a refused connection fails at once (after the
	// usual attempts) instead of being tried for the SDK's 10 s.
	noWait := client.DefaultRetry
	noWait.Refused = 0
	opts = append([]client.Option{client.WithRetry(noWait)}, opts...)
	c, err := client.New(cf.url, append(opts, extra...)...)
	if err != nil {
		return nil, usagef("invalid --url: %v", err)
	}
	return c, nil
}

// printCall calls a route with the flags' client and prints its answer.
func (cf *clientFlags) printCall(ctx context.Context, w io.Writer, method, path string, q url.Values, accept string) error {
	c, err := cf.client()
	if err != nil {
		return err
	}
	resp, err := c.Call(ctx, method, path, q, nil, accept)
	if err != nil {
		return err
	}
	printBody(w, resp.Body)
	return nil
}

// printList calls a listing route and prints its answer; an empty text
// answer prints none on stderr instead (so a person sees that nothing
// matched, and a script reading stdout still reads nothing). JSON is printed
// as it comes ([] when empty).
func (cf *clientFlags) printList(ctx context.Context, e *Env, path string, q url.Values, asJSON bool, none string) error {
	c, err := cf.client()
	if err != nil {
		return err
	}
	resp, err := c.Call(ctx, http.MethodGet, path, q, nil, accept(asJSON))
	if err != nil {
		return err
	}
	if !asJSON && len(bytes.TrimSpace(resp.Body)) == 0 {
		fmt.Fprintln(e.Stderr, none)
		return nil
	}
	printBody(e.Stdout, resp.Body)
	return nil
}

// printOK calls a route answering {"ok": msg} and prints msg.
func (cf *clientFlags) printOK(ctx context.Context, w io.Writer, method, path string) error {
	c, err := cf.client()
	if err != nil {
		return err
	}
	msg, err := okMessage(ctx, c, method, path)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, msg)
	return nil
}

// status returns the execution's status and its JSON.
func status(ctx context.Context, c *client.Client, id string) (core.ExecutionWithState, []byte, error) {
	resp, err := c.Call(ctx, http.MethodGet, client.ExecPath(id, "status"), nil, nil, client.JSON)
	if err != nil {
		return core.ExecutionWithState{}, nil, err
	}
	var st core.ExecutionWithState
	if err := json.Unmarshal(resp.Body, &st); err != nil {
		return st, resp.Body, fmt.Errorf("decode status of %s: %w", id, err)
	}
	return st, resp.Body, nil
}

// result returns the result JSON of a finished execution.
func result(ctx context.Context, c *client.Client, id string) ([]byte, error) {
	resp, err := c.Call(ctx, http.MethodGet, client.ExecPath(id, ""), nil, nil, client.JSON)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// okMessage calls a route answering {"ok": msg} and returns msg.
func okMessage(ctx context.Context, c *client.Client, method, path string) (string, error) {
	resp, err := c.Call(ctx, method, path, nil, nil, client.JSON)
	if err != nil {
		return "", err
	}
	var env struct {
		OK string `json:"ok"`
	}
	if err := json.Unmarshal(resp.Body, &env); err != nil {
		return "", fmt.Errorf("decode answer of %s: %w", path, err)
	}
	return env.OK, nil
}

// errorText renders a command's failure: the server's message and status,
// or a hint when the server cannot be reached.
func errorText(err error) string {
	var ce *client.Error
	if errors.As(err, &ce) {
		return ce.Error()
	}
	if client.IsUnreachable(err) {
		return err.Error() + "\n(is the server running? start one with `stela dev`)"
	}
	return err.Error()
}

// printBody writes a response body, ending it with a newline.
func printBody(w io.Writer, b []byte) {
	_, _ = w.Write(b)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		fmt.Fprintln(w)
	}
}

func accept(asJSON bool) string {
	if asJSON {
		return client.JSON
	}
	return client.Text
}

func compact(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return strings.TrimSpace(string(raw))
	}
	return b.String()
}

func executionCommand() *command {
	return &command{
		name:    "execution",
		summary: "submit and operate executions",
		doc:     "stela execution: submit, inspect and operate executions through the HTTP API.",
		sub: []*command{
			submitCommand(), listCommand(), statusCommand(), resultCommand(),
			eventsCommand(), responsesCommand(), logsCommand(),
			simplePut("pause", "pause an execution", "<execution-id>", "pause"),
			simplePut("unpause", "unpause a paused execution", "<execution-id>", "unpause"),
			simplePut("cancel", "cancel an activity or a cancellable workflow", "<execution-id>", "cancel"),
			signalCommand(),
			historyCommand(), upgradeCommand(),
		},
	}
}

func submitCommand() *command {
	return &command{
		name: "submit", summary: "submit an execution", args: "<ffqn> [params-json]", minArgs: 1, maxArgs: 2,
		doc: "params-json is a JSON array of the function's arguments (default []). The execution id is\n" +
			"generated here unless --id is given, and the request is a PUT, so retrying it is safe.\n" +
			"Prints the execution id; with --follow, then every status change and the result.\n\n" +
			"The component type is the current deployment's for the ffqn. Without a deployment (a fresh\n" +
			"`stela dev`) the server cannot know it, so --component-type activity or workflow is required.\n\n" +
			"Examples:\n  stela execution submit testing:integration/activity.add '[3, 5]' --follow\n" +
			"  stela execution submit demo:hello/greeter.greet '[\"World\"]' --component-type activity",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			cf := addClientFlags(fs, e)
			id := fs.String("id", "", "execution id to use (E_<ULID>); default: a new one")
			follow := fs.Bool("follow", false, "wait until the execution finishes, printing status changes and the result")
			asJSON := fs.Bool("json", false, "print JSON: the server's answer, or with --follow the result only")
			paused := fs.Bool("paused", false, "create the execution paused")
			ctype := fs.String("component-type", "", "the function's component `type`: activity, workflow, …; required when no deployment describes the ffqn (default: the deployment's)")
			interval := fs.Duration("interval", defaultPollInterval, "status poll interval of --follow")
			return func(ctx context.Context, args []string) error {
				ffqn, err := core.ParseFunctionFqn(args[0])
				if err != nil {
					return usagef("invalid ffqn %q: %v", args[0], err)
				}
				params := core.Params{}
				if len(args) == 2 {
					if err := json.Unmarshal([]byte(args[1]), &params); err != nil {
						return usagef("params must be a JSON array, e.g. '[1, \"two\"]': %v", err)
					}
				}
				var eid core.ExecutionId
				if *id != "" {
					if eid, err = core.ParseExecutionId(*id); err != nil || !eid.IsTopLevel() {
						return usagef("invalid --id %q: expected E_<ULID>", *id)
					}
				} else if eid, err = core.NewExecutionId(uint64(time.Now().UnixMilli()), rand.Reader); err != nil {
					return err
				}
				c, err := cf.client()
				if err != nil {
					return err
				}
				typ, err := submitComponentType(ctx, c, ffqn, core.ComponentType(*ctype))
				if err != nil {
					return err
				}
				// A PUT with the id: the client retries it while the server is unreachable.
				body := client.SubmitRequest{FFQN: ffqn, Params: params, Paused: *paused, ComponentType: typ}
				resp, err := c.Call(ctx, http.MethodPut, client.ExecPath(eid.String(), ""), nil, body, client.JSON)
				if err != nil {
					return err
				}
				switch {
				case *follow && *asJSON:
					if _, err := followStatus(ctx, c, eid.String(), *interval, nil, e.Stderr); err != nil {
						return err
					}
					raw, err := result(ctx, c, eid.String())
					if err != nil {
						return err
					}
					printBody(e.Stdout, raw)
				case *follow:
					fmt.Fprintln(e.Stdout, eid)
					if _, err := followStatus(ctx, c, eid.String(), *interval, e.Stdout, e.Stderr); err != nil {
						return err
					}
					return printResult(ctx, c, eid.String(), e.Stdout)
				case *asJSON:
					printBody(e.Stdout, resp.Body)
				default:
					fmt.Fprintln(e.Stdout, eid)
				}
				return nil
			}
		},
	}
}

// submitComponentType decides the component type a submit sends. With a
// current deployment the server takes the type from the component exporting
// ffqn, so nothing is sent, and a --component-type that contradicts it is
// refused here. Without one (a fresh dev store, or a backend without
// deployments) the server stores what the body says, and an activity when it
// says nothing: a workflow submitted so would be stored, listed and
// cancelled as an activity. So there the type must be given.
func submitComponentType(ctx context.Context, c *client.Client, ffqn core.FunctionFqn, flagType core.ComponentType) (core.ComponentType, error) {
	if flagType != "" && !flagType.Valid() {
		return "", usagef("invalid --component-type %q: expected activity, workflow, activity_stub, webhook_endpoint or cron", flagType)
	}
	dep, err := c.GetCurrentDeploymentID(ctx)
	switch {
	case errors.Is(err, core.ErrNotFound), errors.Is(err, core.ErrNotImplemented):
		if flagType == "" {
			return "", usagef("no deployment describes %s, so the server cannot tell an activity from a workflow\n"+
				"(it would store it as an activity): pass --component-type activity or --component-type workflow", ffqn)
		}
		return flagType, nil
	case err != nil:
		return "", err
	}
	comps, err := c.ListComponents(ctx, client.ComponentQuery{DeploymentID: &dep, FFQN: &ffqn})
	if err != nil {
		return "", err
	}
	if len(comps) == 0 {
		return "", fmt.Errorf("the current deployment %s does not export %s (the console's Deployments page, "+
			"or GET /v1/components?exports=true, lists its functions)", dep, ffqn)
	}
	if got := comps[0].ComponentID.ComponentType; flagType != "" && flagType != got {
		return "", usagef("%s is a %s in the current deployment %s, not a %s: drop --component-type", ffqn, got, dep, flagType)
	}
	return "", nil
}

func printResult(ctx context.Context, c *client.Client, id string, w io.Writer) error {
	raw, err := result(ctx, c, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Result: %s\n", compact(raw))
	return nil
}

func listCommand() *command {
	return &command{
		name: "list", summary: "list executions, newest first", maxArgs: 0,
		doc: "Example:\n  stela execution list --ffqn-prefix testing: --hide-finished",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			cf := addClientFlags(fs, e)
			prefix := fs.String("ffqn-prefix", "", "only functions whose ffqn starts with this")
			limit := fs.Int("limit", 20, "maximum number of executions (the server caps it at 100)")
			derived := fs.Bool("show-derived", false, "include child executions")
			hide := fs.Bool("hide-finished", false, "omit finished executions")
			asJSON := fs.Bool("json", false, "print JSON")
			return func(ctx context.Context, _ []string) error {
				q := url.Values{"length": {strconv.Itoa(*limit)}}
				if *prefix != "" {
					q.Set("ffqn_prefix", *prefix)
				}
				if *derived {
					q.Set("show_derived", "true")
				}
				if *hide {
					q.Set("hide_finished", "true")
				}
				none := "no executions"
				if *prefix != "" || *hide {
					none = "no executions match the filters"
				}
				return cf.printList(ctx, e, "/v1/executions", q, *asJSON, none)
			}
		},
	}
}

func statusCommand() *command {
	return &command{
		name: "status", summary: "show an execution's status", args: "<execution-id>", minArgs: 1, maxArgs: 1,
		doc: "With --follow it polls the status every --interval, prints each change and, once the\n" +
			"execution finished, its result; with --json it prints each status as one JSON line.",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			cf := addClientFlags(fs, e)
			follow := fs.Bool("follow", false, "poll until the execution finishes, printing every change")
			asJSON := fs.Bool("json", false, "print JSON")
			interval := fs.Duration("interval", defaultPollInterval, "poll interval of --follow")
			return func(ctx context.Context, args []string) error {
				id := args[0]
				if !*follow {
					return cf.printCall(ctx, e.Stdout, http.MethodGet, client.ExecPath(id, "status"), nil, accept(*asJSON))
				}
				c, err := cf.client()
				if err != nil {
					return err
				}
				if *asJSON {
					_, err := followStatus(ctx, c, id, *interval, jsonLines{e.Stdout}, e.Stderr)
					return err
				}
				if _, err := followStatus(ctx, c, id, *interval, e.Stdout, e.Stderr); err != nil {
					return err
				}
				return printResult(ctx, c, id, e.Stdout)
			}
		},
	}
}

// jsonLines marks followStatus output that wants compact JSON lines.
type jsonLines struct{ io.Writer }

// followStatus polls the status every interval until it is finished. Each
// change is printed to out (text with the elapsed time, or a JSON line when
// out is a jsonLines); nil prints nothing. While unchanged, a progress note
// goes to progress every 10 polls. Fetch errors other than 4xx are retried.
func followStatus(ctx context.Context, c *client.Client, id string, interval time.Duration, out io.Writer, progress io.Writer) (core.ExecutionWithState, error) {
	start := time.Now()
	var last string
	unchanged := 0
	for {
		st, raw, err := status(ctx, c, id)
		switch {
		case err != nil && client.StatusOf(err) >= 400 && client.StatusOf(err) < 500:
			return st, err
		case err != nil:
			if ctx.Err() != nil {
				return st, ctx.Err()
			}
			fmt.Fprintf(progress, "status of %s: %s; retrying\n", id, errorText(err))
		default:
			line := compact(raw)
			if line != last {
				last, unchanged = line, 0
				switch w := out.(type) {
				case nil:
				case jsonLines:
					fmt.Fprintln(w, line)
				default:
					fmt.Fprintf(w, "[%5.1fs] %s\n", time.Since(start).Seconds(), st.PendingState.String())
				}
			} else if unchanged++; unchanged%10 == 0 {
				fmt.Fprintf(progress, "… still %s after %.0fs\n", st.PendingState.String(), time.Since(start).Seconds())
			}
			if st.PendingState.State == core.StateFinished {
				return st, nil
			}
		}
		if err := store.Sleep(ctx, interval); err != nil {
			return st, err
		}
	}
}

func resultCommand() *command {
	return &command{
		name: "result", summary: "print a finished execution's result (JSON)", args: "<execution-id>", minArgs: 1, maxArgs: 1,
		doc: "Prints {\"ok\": value}, {\"err\": value} or {\"execution_failed\": {…}}. Without --follow an\n" +
			"unfinished execution is an error (HTTP 425); with --follow the command waits for it.",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			cf := addClientFlags(fs, e)
			follow := fs.Bool("follow", false, "wait until the execution finishes")
			return func(ctx context.Context, args []string) error {
				c, err := cf.client()
				if err != nil {
					return err
				}
				for {
					q := url.Values{}
					if *follow {
						q.Set("follow", "true")
					}
					resp, err := c.Call(ctx, http.MethodGet, client.ExecPath(args[0], ""), q, nil, client.JSON)
					if err == nil && resp.Status == http.StatusOK {
						printBody(e.Stdout, resp.Body)
						return nil
					}
					if !*follow || (err != nil && client.StatusOf(err) != http.StatusTooEarly) {
						return err
					}
					// The server's long poll ended first (HTTP 425/202): ask again.
					if err := ctx.Err(); err != nil {
						return err
					}
				}
			}
		},
	}
}

func eventsCommand() *command {
	return &command{
		name: "events", summary: "list an execution's events", args: "<execution-id>", minArgs: 1, maxArgs: 1,
		doc: "Without --from it shows the newest --limit events; with --from V the events from version V on.",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			cf := addClientFlags(fs, e)
			from := fs.Int("from", -1, "first version to show (default: the newest page)")
			limit := fs.Int("limit", 20, "maximum number of events")
			asJSON := fs.Bool("json", false, "print JSON")
			return func(ctx context.Context, args []string) error {
				q := url.Values{"length": {strconv.Itoa(*limit)}}
				if *from >= 0 {
					q.Set("version", strconv.Itoa(*from))
					q.Set("including_cursor", "true")
				} else {
					q.Set("direction", "older")
				}
				none := "no events"
				if *from >= 0 {
					none = fmt.Sprintf("no events from version %d on", *from)
				}
				return cf.printList(ctx, e, client.ExecPath(args[0], "events"), q, *asJSON, none)
			}
		},
	}
}

func responsesCommand() *command {
	return &command{
		name: "responses", summary: "list an execution's join-set responses", args: "<execution-id>", minArgs: 1, maxArgs: 1,
		doc: "Without --from it shows the newest --limit responses; with --from C those from cursor C on.",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			cf := addClientFlags(fs, e)
			from := fs.Int("from", -1, "first response cursor to show (default: the newest page)")
			limit := fs.Int("limit", 20, "maximum number of responses")
			asJSON := fs.Bool("json", false, "print JSON")
			return func(ctx context.Context, args []string) error {
				q := url.Values{"length": {strconv.Itoa(*limit)}}
				if *from >= 0 {
					q.Set("cursor", strconv.Itoa(*from))
					q.Set("including_cursor", "true")
				} else {
					q.Set("direction", "older")
				}
				none := "no responses"
				if *from >= 0 {
					none = fmt.Sprintf("no responses from cursor %d on", *from)
				}
				return cf.printList(ctx, e, client.ExecPath(args[0], "responses"), q, *asJSON, none)
			}
		},
	}
}

// logItem is one entry of GET …/logs.
type logItem struct {
	Cursor      string  `json:"cursor"`
	RunID       string  `json:"run_id"`
	ExecutionID string  `json:"execution_id"`
	Type        string  `json:"type"`
	CreatedAt   string  `json:"created_at"`
	Level       string  `json:"level"`
	Message     *string `json:"message"`
	Payload     *string `json:"payload"`
	StreamType  string  `json:"stream_type"`
}

var logLevels = []string{"trace", "debug", "info", "warn", "error"}

func logsCommand() *command {
	return &command{
		name: "logs", summary: "print an execution's logs and output streams", args: "<execution-id>", minArgs: 1, maxArgs: 1,
		doc: "With --follow it keeps polling for new entries until the execution finished and no more\n" +
			"entries arrive. --json prints one JSON object per line.",
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			cf := addClientFlags(fs, e)
			asJSON := fs.Bool("json", false, "print one JSON object per line")
			follow := fs.Bool("follow", false, "keep printing new entries until the execution finished")
			level := fs.String("level", "debug", "lowest log level shown: trace, debug, info, warn, error, or off")
			stream := fs.String("stream-type", "all", "output streams shown: all, stdout, stderr or none")
			limit := fs.Int("limit", 100, "entries per request (the server caps it at 100)")
			derived := fs.Bool("show-derived", false, "include the logs of child executions")
			runID := fs.Bool("show-run-id", false, "print each entry's run id")
			interval := fs.Duration("interval", defaultPollInterval, "poll interval of --follow")
			return func(ctx context.Context, args []string) error {
				q := url.Values{"length": {strconv.Itoa(*limit)}, "direction": {"newer"}}
				switch lv := strings.ToLower(*level); lv {
				case "off":
					q.Set("show_logs", "false")
				default:
					i := indexOf(logLevels, lv)
					if i < 0 {
						return usagef("invalid --level %q", *level)
					}
					q["level"] = logLevels[i:]
				}
				switch *stream {
				case "all":
				case "stdout", "stderr":
					q.Set("stream_type", *stream)
				case "none":
					q.Set("show_streams", "false")
				default:
					return usagef("invalid --stream-type %q", *stream)
				}
				if *derived {
					q.Set("show_derived", "true")
				}
				c, err := cf.client()
				if err != nil {
					return err
				}
				id := args[0]
				printed := 0
				noLogs := func() {
					if printed == 0 && !*asJSON {
						fmt.Fprintln(e.Stderr, "no logs")
					}
				}
				for {
					resp, err := c.Call(ctx, http.MethodGet, client.ExecPath(id, "logs"), q, nil, client.JSON)
					if err != nil {
						return err
					}
					var items []logItem
					if err := json.Unmarshal(resp.Body, &items); err != nil {
						return fmt.Errorf("decode logs of %s: %w", id, err)
					}
					for _, it := range items {
						printLog(e.Stdout, it, *asJSON, *runID, *derived)
					}
					printed += len(items)
					if len(items) > 0 {
						q.Set("cursor", items[len(items)-1].Cursor)
						q.Set("including_cursor", "false")
					}
					if len(items) == *limit {
						continue // more pages
					}
					if !*follow {
						noLogs()
						return nil
					}
					st, _, err := status(ctx, c, id)
					if err != nil {
						return err
					}
					if st.PendingState.State == core.StateFinished && len(items) == 0 {
						noLogs()
						return nil
					}
					if len(items) == 0 {
						if err := store.Sleep(ctx, *interval); err != nil {
							return err
						}
					}
				}
			}
		},
	}
}

func printLog(w io.Writer, it logItem, asJSON, runID, execID bool) {
	if asJSON {
		b, _ := json.Marshal(it)
		fmt.Fprintln(w, string(b))
		return
	}
	var b strings.Builder
	b.WriteString(it.CreatedAt)
	if it.Type == "stream" {
		fmt.Fprintf(&b, " [%-6s] ", strings.ToUpper(it.StreamType))
	} else {
		fmt.Fprintf(&b, " [%-6s] ", strings.ToUpper(it.Level))
	}
	if runID {
		b.WriteString(it.RunID + " ")
	}
	if execID {
		b.WriteString(it.ExecutionID + " ")
	}
	switch {
	case it.Message != nil:
		b.WriteString(*it.Message)
	case it.Payload != nil:
		raw, err := base64.StdEncoding.DecodeString(*it.Payload)
		if err != nil {
			raw = []byte(*it.Payload)
		}
		b.WriteString(strings.TrimRight(strings.ToValidUTF8(string(raw), "\uFFFD"), "\n"))
	}
	fmt.Fprintln(w, b.String())
}

// simplePut is a leaf that PUTs to /v1/executions/{id}/<action> and prints
// the server's {"ok": …} message.
func simplePut(name, summary, args, action string) *command {
	return &command{
		name: name, summary: summary, args: args, minArgs: 1, maxArgs: 1,
		flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
			cf := addClientFlags(fs, e)
			return func(ctx context.Context, a []string) error {
				return cf.printOK(ctx, e.Stdout, http.MethodPut, client.ExecPath(a[0], action))
			}
		},
	}
}

func delayCommand() *command {
	leaf := func(name, summary, action string) *command {
		return &command{
			name: name, summary: summary, args: "<delay-id>", minArgs: 1, maxArgs: 1,
			flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
				cf := addClientFlags(fs, e)
				return func(ctx context.Context, a []string) error {
					return cf.printOK(ctx, e.Stdout, http.MethodPut, "/v1/delays/"+url.PathEscape(a[0])+"/"+action)
				}
			},
		}
	}
	return &command{
		name: "delay", summary: "pause, unpause or cancel a workflow's delay (timer)",
		doc: "stela delay: operate a delay by its id (Delay_<ULID>.<join-set>_<n>, shown in the owner's events).",
		sub: []*command{
			leaf("pause", "pause a delay: the timer does not fire until unpaused", "pause"),
			leaf("unpause", "unpause a paused delay", "unpause"),
			leaf("cancel", "cancel a delay: its owner gets a cancelled response", "cancel"),
		},
	}
}

func deploymentCommand() *command {
	return &command{
		name: "deployment", summary: "inspect deployments",
		doc: "stela deployment: list deployments or show one.",
		sub: []*command{
			{
				name: "list", summary: "list deployments, newest first, with execution counts", maxArgs: 0,
				flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
					cf := addClientFlags(fs, e)
					limit := fs.Int("limit", 20, "maximum number of deployments")
					asJSON := fs.Bool("json", false, "print JSON")
					return func(ctx context.Context, _ []string) error {
						return cf.printList(ctx, e, "/v1/deployments", url.Values{"length": {strconv.Itoa(*limit)}}, *asJSON, "no deployments")
					}
				},
			},
			{
				name: "get", summary: "show a deployment and its files", args: "<deployment-id>", minArgs: 1, maxArgs: 1,
				flags: func(fs *flag.FlagSet, e *Env) func(context.Context, []string) error {
					cf := addClientFlags(fs, e)
					asJSON := fs.Bool("json", false, "print JSON")
					return func(ctx context.Context, a []string) error {
						return cf.printCall(ctx, e.Stdout, http.MethodGet, "/v1/deployments/"+url.PathEscape(a[0]), nil, accept(*asJSON))
					}
				},
			},
		},
	}
}
