#!/bin/bash
# LocalStack "ready" init hook (mounted at /etc/localstack/init/ready.d/):
# creates Stela's DynamoDB table and CAS bucket once LocalStack accepts
# requests. The table definition is localstack/table.json, generated from
# dynamo.Schema by `go run ./localstack/schemagen -o localstack/table.json`
# (a test fails when it is stale), so the emulated table has exactly the
# keys and indexes of the CDK stack and of dynamo.CreateTable.
#
# Outside LocalStack (no `awslocal`), it uses `aws` with the endpoints of
# the environment (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_DYNAMODB/_S3), e.g.
# against DynamoDB Local and gofakes3:
#   STELA_TABLE_JSON=localstack/table.json localstack/init/ready.d/init.sh
# Idempotent: existing resources are kept.
set -euo pipefail

TABLE=${STELA_TABLE:-stela}
BUCKET=${STELA_BUCKET:-stela-cas}
SCHEMA=${STELA_TABLE_JSON:-/etc/localstack/stela/table.json}
# The table's TTL attribute (infra.TTLAttribute in the CDK stack).
TTL_ATTRIBUTE=ttl

if command -v awslocal >/dev/null 2>&1; then
	AWS=(awslocal)
else
	AWS=(aws)
fi
say() { echo "stela-init: $*"; }

if "${AWS[@]}" dynamodb describe-table --table-name "$TABLE" >/dev/null 2>&1; then
	say "table $TABLE exists"
else
	"${AWS[@]}" dynamodb create-table --cli-input-json "file://$SCHEMA" --table-name "$TABLE" >/dev/null
	"${AWS[@]}" dynamodb wait table-exists --table-name "$TABLE"
	say "created table $TABLE from $SCHEMA"
fi
ttl=$("${AWS[@]}" dynamodb describe-time-to-live --table-name "$TABLE" \
	--query 'TimeToLiveDescription.TimeToLiveStatus' --output text 2>/dev/null || echo unknown)
if [ "$ttl" != ENABLED ] && [ "$ttl" != ENABLING ]; then
	"${AWS[@]}" dynamodb update-time-to-live --table-name "$TABLE" \
		--time-to-live-specification "Enabled=true,AttributeName=$TTL_ATTRIBUTE" >/dev/null
	say "enabled TTL on $TABLE.$TTL_ATTRIBUTE"
fi

if "${AWS[@]}" s3api head-bucket --bucket "$BUCKET" >/dev/null 2>&1; then
	say "bucket $BUCKET exists"
else
	"${AWS[@]}" s3api create-bucket --bucket "$BUCKET" >/dev/null
	say "created bucket $BUCKET"
fi
