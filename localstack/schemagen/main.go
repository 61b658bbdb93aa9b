// Command schemagen prints the DynamoDB CreateTable request of Stela's table
// (dynamo.CreateTableInput, i.e. dynamo.Schema) as JSON for
// `aws dynamodb create-table --cli-input-json file://…`, so that LocalStack's
// init hook and any shell setup create exactly the table the Go code and the
// CDK stack create.
//
//	go run ./localstack/schemagen                  # to stdout, table "stela"
//	go run ./localstack/schemagen -o localstack/table.json
//	go run ./localstack/schemagen -check localstack/table.json   # exit 1 if stale
//	go run ./localstack/schemagen -create -table t # create it at the configured endpoint
//
// With -create it calls dynamo.CreateTable instead (endpoint from
// AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL), which waits until the
// table is ACTIVE and tolerates an existing table.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/dynamo/dynamoenv"
)

// DefaultTable is the table name written into the JSON; the AWS CLI lets
// --table-name override it.
const DefaultTable = "stela"

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("schemagen", flag.ContinueOnError)
	out := fs.String("o", "", "write the JSON to this file instead of stdout")
	check := fs.String("check", "", "compare this file with the generated JSON; fail if it differs")
	table := fs.String("table", DefaultTable, "table name")
	create := fs.Bool("create", false, "create the table at the configured DynamoDB endpoint instead of printing JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *create {
		client, err := dynamoenv.NewClient(ctx)
		if err != nil {
			return err
		}
		return dynamo.CreateTable(ctx, client, *table)
	}
	b, err := TableJSON(*table)
	if err != nil {
		return err
	}
	switch {
	case *check != "":
		old, err := os.ReadFile(*check)
		if err != nil {
			return err
		}
		if !bytes.Equal(old, b) {
			return fmt.Errorf("%s is stale: regenerate it with go run ./localstack/schemagen -o %s", *check, *check)
		}
		return nil
	case *out != "":
		return os.WriteFile(*out, b, 0o644)
	default:
		_, err := stdout.Write(b)
		return err
	}
}

// TableJSON renders dynamo.CreateTableInput(table) in the AWS CLI's
// --cli-input-json shape: the API's member names, without the SDK's unset
// (null) members, indented, with a trailing newline.
func TableJSON(table string) ([]byte, error) {
	raw, err := json.Marshal(dynamo.CreateTableInput(table))
	if err != nil {
		return nil, fmt.Errorf("marshal CreateTableInput: %w", err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("re-read CreateTableInput: %w", err)
	}
	b, err := json.MarshalIndent(prune(v), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("marshal table JSON: %w", err)
	}
	return append(b, '\n'), nil
}

// prune drops nulls, empty strings, empty lists and empty objects, which the
// SDK marshals for unset members and the CLI would reject.
func prune(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if e = prune(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		var out []any
		for _, e := range v {
			if e = prune(e); e != nil {
				out = append(out, e)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case string:
		if v == "" {
			return nil
		}
		return v
	default:
		return v
	}
}
