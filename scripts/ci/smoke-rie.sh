#!/usr/bin/env bash
# Smoke test of the real Lambda artefact: builds the `api` function's
# bootstrap exactly as for deployment (scripts/build-lambdas.sh, but for
# this host's architecture), runs it under the AWS Lambda Runtime Interface
# Emulator against DynamoDB Local, and feeds it API Gateway HTTP API (payload
# 2.0) events one at a time (RIE crashes on concurrent invokes):
#
#   POST /v1/executions                    -> 201 {"ok":"E_…"}
#   GET  /v1/executions/{id}/status        -> 200, that execution, pending
#   PUT  /v1/executions/{id} same params   -> 200 (idempotent resubmit)
#   PUT  /v1/executions/{id} other params  -> 409
#   GET  /v1/executions/{unknown}/status   -> 404
#   GET  /openapi.json                     -> 200, an OpenAPI 3.1 document
#
# and reports the binary size and the first invoke's latency (cold start:
# process start, app.FromEnv, the first DynamoDB round trips). SMOKE_KEEP=1
# keeps the work directory (events, responses, RIE log).
#
# DynamoDB: AWS_ENDPOINT_URL_DYNAMODB if exported (CI's instance), else it
# starts DynamoDB Local itself (scripts/ci/start-dynamodb-local.sh) and stops
# it afterwards. The table is created fresh from dynamo.Schema.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
TOOLS=${TOOLS:-$ROOT/.tools}
RIE_VERSION=v0.0.0-20261030222936-bef5c4ba774d
RIE=$TOOLS/bin/aws-lambda-rie
RIE_PORT=${RIE_PORT:-9280}
RIE_API_PORT=${RIE_API_PORT:-9281}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/stela-smoke.XXXXXX")

export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test}
export AWS_REGION=${AWS_REGION:-us-east-1} AWS_DEFAULT_REGION=${AWS_DEFAULT_REGION:-us-east-1}
export AWS_EC2_METADATA_DISABLED=true

log() { echo "smoke-rie: $*" >&2; }
fail() {
	log "FAIL: $*"
	[ -f "$WORK/rie.log" ] && { log "RIE/function log:"; tail -n 40 "$WORK/rie.log" >&2; }
	exit 1
}

RIE_PID=
STARTED_DDB=0
cleanup() {
	[ -n "$RIE_PID" ] && kill "$RIE_PID" 2>/dev/null && wait "$RIE_PID" 2>/dev/null
	[ "$STARTED_DDB" = 1 ] && scripts/ci/stop-dynamodb-local.sh >/dev/null 2>&1
	if [ "${SMOKE_KEEP:-0}" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK"; fi
	return 0
}
trap cleanup EXIT

# --- tools and artefact --------------------------------------------------------
if [ ! -x "$RIE" ]; then
	log "installing aws-lambda-rie $RIE_VERSION into $TOOLS/bin"
	GOBIN="$TOOLS/bin" go install "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$RIE_VERSION"
fi
HOSTARCH=$(go env GOARCH)
log "building functions/api for linux/$HOSTARCH"
GOARCH=$HOSTARCH OUT="$WORK/build" scripts/build-lambdas.sh api >&2
BOOTSTRAP=$WORK/build/api/bootstrap
SIZE=$(stat -c %s "$BOOTSTRAP")

# --- DynamoDB ------------------------------------------------------------------
if [ -z "${AWS_ENDPOINT_URL_DYNAMODB:-}" ]; then
	if [ -f "$TOOLS/ddb.pid" ] && kill -0 "$(cat "$TOOLS/ddb.pid")" 2>/dev/null; then
		STARTED_DDB=0
	else
		STARTED_DDB=1
	fi
	eval "$(scripts/ci/start-dynamodb-local.sh)"
fi
curl -s -o /dev/null -m 3 "$AWS_ENDPOINT_URL_DYNAMODB/" || fail "DynamoDB at $AWS_ENDPOINT_URL_DYNAMODB does not answer"
TABLE=stela-smoke-$(date +%s)-$$
go run ./localstack/schemagen -create -table "$TABLE" || fail "create table $TABLE"
log "table $TABLE at $AWS_ENDPOINT_URL_DYNAMODB"

# --- RIE -------------------------------------------------------------------------
for p in "$RIE_PORT" "$RIE_API_PORT"; do
	if curl -s -o /dev/null -m 1 "http://127.0.0.1:$p/"; then
		fail "port $p is in use; set RIE_PORT / RIE_API_PORT"
	fi
done
# Only what the deployed function gets (infra/stack.go) plus the endpoint.
env -i PATH="$PATH" HOME="$WORK" \
	AWS_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" AWS_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
	AWS_REGION="$AWS_REGION" AWS_EC2_METADATA_DISABLED=true \
	AWS_ENDPOINT_URL_DYNAMODB="$AWS_ENDPOINT_URL_DYNAMODB" \
	AWS_LAMBDA_FUNCTION_TIMEOUT=25 AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256 \
	STELA_TABLE="$TABLE" STELA_BUCKET_PREFIX=cas/ STELA_FOLLOW_WAIT=20s \
	"$RIE" --runtime-interface-emulator-address "127.0.0.1:$RIE_PORT" \
	--runtime-api-address "127.0.0.1:$RIE_API_PORT" "$BOOTSTRAP" >"$WORK/rie.log" 2>&1 &
RIE_PID=$!
for _ in $(seq 1 100); do
	curl -s -o /dev/null -m 1 "http://127.0.0.1:$RIE_PORT/" && break
	kill -0 "$RIE_PID" 2>/dev/null || fail "RIE exited"
	sleep 0.1
done

# event METHOD PATH [BODY]: an API Gateway HTTP API payload-2.0 event.
event() {
	jq -n --arg m "$1" --arg p "$2" --arg b "${3:-}" '{
		version: "2.0", routeKey: "$default", rawPath: $p, rawQueryString: "",
		headers: {"accept": "application/json", "content-type": "application/json", "host": "smoke.execute-api.localhost"},
		requestContext: {accountId: "000000000000", apiId: "smoke", domainName: "smoke.execute-api.localhost",
			domainPrefix: "smoke", requestId: ("smoke-" + ($m|ascii_downcase) + "-" + (now|tostring)),
			routeKey: "$default", stage: "$default", time: "29/Nov/2026:00:00:00 +0000", timeEpoch: 0,
			http: {method: $m, path: $p, protocol: "HTTP/1.1", sourceIp: "127.0.0.1", userAgent: "smoke-rie"}},
		body: $b, isBase64Encoded: false}'
}

N=0
# invoke METHOD PATH WANT_STATUS [BODY]: one invocation; sets RESP (the
# response body, decoded) and TIME (seconds).
invoke() {
	local out=$WORK/resp.$N.json
	N=$((N + 1))
	event "$1" "$2" "${4:-}" >"$WORK/event.json"
	TIME=$(curl -s -o "$out" -w '%{time_total}' -m 30 -X POST \
		"http://127.0.0.1:$RIE_PORT/2015-03-31/functions/function/invocations" --data-binary @"$WORK/event.json") ||
		fail "$1 $2: invoke failed"
	# A function error comes back as HTTP 200 {"errorMessage","errorType"}.
	if jq -e 'has("errorType")' "$out" >/dev/null 2>&1; then
		fail "$1 $2: function error $(cat "$out")"
	fi
	local status
	status=$(jq -r '.statusCode' "$out") || fail "$1 $2: not an API Gateway response: $(cat "$out")"
	RESP=$(jq -r 'if .isBase64Encoded then (.body|@base64d) else .body end' "$out")
	[ "$status" = "$3" ] || fail "$1 $2: status $status, want $3; body $RESP"
	log "$(printf '%-4s %-52s %s  %6.1f ms' "$1" "$2" "$status" "$(echo "$TIME * 1000" | bc -l)")"
}

PARAMS='{"ffqn":"smoke:pkg/ifc.fn","params":[1,"two"]}'
# The first invoke is the cold start: process start, app.FromEnv (AWS
# config, clients) and the first DynamoDB round trips of a submit.
invoke POST /v1/executions 201 "$PARAMS"
FIRST=$TIME
ID=$(echo "$RESP" | jq -r '.ok') || fail "submit answer: $RESP"
[[ "$ID" == E_* ]] || fail "submit answered $RESP, want {\"ok\":\"E_…\"}"

invoke GET "/v1/executions/$ID/status" 200
log "  status: $(echo "$RESP" | jq -c . | cut -c1-300)"
echo "$RESP" | jq -e --arg id "$ID" 'tostring | contains($id)' >/dev/null || fail "status does not name $ID: $RESP"
echo "$RESP" | jq -e 'tostring | test("pending"; "i")' >/dev/null || fail "status is not pending: $RESP"

invoke PUT "/v1/executions/$ID" 200 "$PARAMS"
invoke PUT "/v1/executions/$ID" 409 '{"ffqn":"smoke:pkg/ifc.fn","params":[2]}'
invoke GET /v1/executions/E_01KDZZZZZZZZZZZZZZZZZZZZZZ/status 404
invoke GET /openapi.json 200
echo "$RESP" | jq -e '.openapi | startswith("3.1")' >/dev/null || fail "openapi.json: $RESP"

# RIE logs the init phase (runtime start to its first /next) as INIT REPORT.
INIT=$(sed -n 's/.*INIT REPORT(durationMs: \([0-9.]*\)).*/\1/p' "$WORK/rie.log" | head -n 1)
printf 'smoke-rie: PASS  api bootstrap linux/%s %d bytes (%.1f MiB); init %s ms; cold first invoke %.1f ms (curl, init included); %d invokes\n' \
	"$HOSTARCH" "$SIZE" "$(echo "$SIZE / 1048576" | bc -l)" "${INIT:-?}" "$(echo "$FIRST * 1000" | bc -l)" "$N"
