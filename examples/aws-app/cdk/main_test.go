package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/stela-dev/stela/infra/stelacdk"
)

// synth synthesizes the app offline (no AWS account, no cdk CLI) with
// placeholder bootstraps and returns its template.
func synth(t *testing.T) map[string]any {
	t.Helper()
	dir := t.TempDir()
	for _, name := range append(stelacdk.FunctionNames(stelacdk.StelaProps{}), "worker") {
		if err := stelacdk.WritePlaceholder(filepath.Join(dir, name, "bootstrap")); err != nil {
			t.Fatal(err)
		}
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir()),
		Context: &map[string]any{"aws:cdk:enable-path-metadata": true}})
	stack := NewAppStack(app, "AwsApp", &AppProps{StelaBuildDir: dir, WorkerAssetDir: filepath.Join(dir, "worker")})
	var tmpl map[string]any
	if err := json.Unmarshal([]byte(mustJSON(t, assertions.Template_FromStack(stack, nil).ToJSON())), &tmpl); err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

// logicalID returns the id of the resource at aws:cdk:path AwsApp/<path>.
func logicalID(t *testing.T, tmpl map[string]any, path string) string {
	t.Helper()
	for id, r := range tmpl["Resources"].(map[string]any) {
		md, _ := r.(map[string]any)["Metadata"].(map[string]any)
		if md["aws:cdk:path"] == "AwsApp/"+path {
			return id
		}
	}
	t.Fatalf("no resource at %s", path)
	return ""
}

// TestWorkerIsLeastPrivilege lists every permission of the worker's role:
// exactly the worker's data access on this app's Stela, its log group and
// its dead-letter queue — nothing else, no wildcard action, no "*"
// resource, no managed policy.
func TestWorkerIsLeastPrivilege(t *testing.T) {
	tmpl := synth(t)
	res := tmpl["Resources"].(map[string]any)
	role := logicalID(t, tmpl, "OrdersWorker/FunctionRole/Resource")
	table := logicalID(t, tmpl, "Stela/Table/Resource")
	bucket := logicalID(t, tmpl, "Stela/Cas/Resource")
	logs := logicalID(t, tmpl, "OrdersWorker/FunctionLogs/Resource")
	dlq := logicalID(t, tmpl, "OrdersWorker/DeadLetters/Resource")
	if r := res[role].(map[string]any)["Properties"].(map[string]any); r["ManagedPolicyArns"] != nil || r["Policies"] != nil {
		t.Errorf("the role has managed or inline policies: %v", r)
	}
	// Render each statement as "actions on resources [condition]" with the
	// resources named by what they are.
	names := map[string]string{table: "table", bucket: "bucket", logs: "logs", dlq: "dlq"}
	var got []string
	for _, r := range res {
		r := r.(map[string]any)
		if r["Type"] != "AWS::IAM::Policy" {
			continue
		}
		props := r["Properties"].(map[string]any)
		if !strings.Contains(mustJSON(t, props["Roles"]), `"`+role+`"`) {
			continue
		}
		for _, st := range props["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := st.(map[string]any)
			line := strings.Join(list(st["Action"]), ",") + " on "
			var rs []string
			for _, r := range list(st["Resource"]) {
				s := r
				for id, name := range names {
					s = strings.ReplaceAll(s, `{"Fn::GetAtt":["`+id+`","Arn"]}`, name)
					s = strings.ReplaceAll(s, `{"Ref":"`+id+`"}`, name)
				}
				s = strings.NewReplacer(`{"Fn::Join":["",[`, "", `]]}`, "", `,"`, "", `"`, "").Replace(s)
				rs = append(rs, s)
			}
			line += strings.Join(rs, " ")
			if c, ok := st["Condition"]; ok {
				line += " if " + mustJSON(t, c)
			}
			got = append(got, st["Effect"].(string)+" "+line)
		}
	}
	slices.Sort(got)
	want := []string{
		"Allow dynamodb:GetItem,dynamodb:BatchGetItem,dynamodb:Query,dynamodb:PutItem,dynamodb:UpdateItem,dynamodb:DeleteItem,dynamodb:ConditionCheckItem on table",
		"Allow dynamodb:Query on table/index/pending-ffqn table/index/ordinals",
		"Allow logs:CreateLogStream,logs:PutLogEvents on logs",
		"Allow s3:GetObject on bucket/cas/*",
		"Allow s3:ListBucket on bucket",
		`Allow s3:PutObject on bucket/cas/* if {"Null":{"s3:if-none-match":"false"}}`,
		"Allow sqs:SendMessage,sqs:GetQueueAttributes,sqs:GetQueueUrl on dlq",
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the worker's role grants\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func list(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			} else {
				b, _ := json.Marshal(e)
				out = append(out, string(b))
			}
		}
		return out
	default:
		b, _ := json.Marshal(v)
		return []string{string(b)}
	}
}
