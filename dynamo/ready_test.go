package dynamo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stela-dev/stela/dynamo"
	"github.com/stela-dev/stela/store"
)

func TestReady(t *testing.T) {
	ctx := context.Background()
	t.Run("TableCreatedByCreateTableIsReady", func(t *testing.T) {
		b, _ := newBackend(t, dynamo.Options{})
		if err := b.Ready(ctx); err != nil {
			t.Fatalf("Ready = %v, want nil", err)
		}
		if err := store.New(b, store.Options{}).Ready(ctx); err != nil {
			t.Fatalf("Service.Ready = %v, want nil", err)
		}
	})
	t.Run("MissingTableIsNotReady", func(t *testing.T) {
		b, err := dynamo.New(newClient(t), dynamo.Options{Table: "stela-test-no-such-table"})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Ready(ctx); err == nil || !strings.Contains(err.Error(), "not ready") {
			t.Fatalf("Ready = %v, want not ready", err)
		}
	})
	t.Run("TableWithoutAnIndexOfTheSchemaIsNotReady", func(t *testing.T) {
		client := newClient(t)
		name := "stela-test-old-schema-" + strings.ReplaceAll(t.Name(), "/", "-")[len("TestReady-"):]
		in := dynamo.CreateTableInput(name)
		dropped := *in.GlobalSecondaryIndexes[len(in.GlobalSecondaryIndexes)-1].IndexName
		in.GlobalSecondaryIndexes = in.GlobalSecondaryIndexes[:len(in.GlobalSecondaryIndexes)-1]
		used := map[string]bool{}
		for _, k := range in.KeySchema {
			used[*k.AttributeName] = true
		}
		for _, ix := range in.GlobalSecondaryIndexes {
			for _, k := range ix.KeySchema {
				used[*k.AttributeName] = true
			}
		}
		for _, ix := range in.LocalSecondaryIndexes {
			for _, k := range ix.KeySchema {
				used[*k.AttributeName] = true
			}
		}
		var defs []types.AttributeDefinition
		for _, d := range in.AttributeDefinitions {
			if used[*d.AttributeName] {
				defs = append(defs, d)
			}
		}
		in.AttributeDefinitions = defs
		if _, err := client.CreateTable(ctx, in); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		})
		b, err := dynamo.New(client, dynamo.Options{Table: name})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Ready(ctx); err == nil || !strings.Contains(err.Error(), dropped) {
			t.Fatalf("Ready = %v, want an error naming the missing index %s", err, dropped)
		}
	})
}
