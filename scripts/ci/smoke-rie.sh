#!/usr/bin/env bash
# Smoke test of the real Lambda artefacts: builds every function's
# bootstrap exactly as for deployment (scripts/build-lambdas.sh, but for
# this host's architecture), runs each under the AWS Lambda Runtime
# Interface Emulator against DynamoDB Local, one after the other on one
# fresh table, and feeds it events one at a time (RIE crashes on concurrent
# invokes):
#
#   api     API Gateway HTTP API (payload 2.0) events:
#           POST /v1/executions                    -> 201 {"ok":"E_…"}
#           GET  /v1/executions/{id}/status        -> 200, that execution, pending
#           PUT  /v1/executions/{id} same params   -> 200 (idempotent resubmit)
#           PUT  /v1/executions/{id} other params  -> 409
#           GET  /v1/executions/{unknown}/status   -> 404
#           GET  /openapi.json                     -> 200, an OpenAPI 3.1 document
#   lock    POST /v1/worker/lock/pending-by-ffqns  -> 200, the execution, next_version 2
#   append  POST /v1/worker/append (finished)      -> 200
#   timers  an EventBridge scheduled event         -> timers.Stats, passes >= 1, none failed
#   worker  an EventBridge scheduled event         -> a worker pass result, idle
#   aws-app-worker (the sample application's worker, examples/aws-app/cmd/worker,
#           built in its own module): an EventBridge scheduled event -> a pass
#           that ran the sample's pricing activity api submitted, idle
#
# and reports, for each function, the binary size, the init duration (RIE's
# INIT REPORT: process start to the runtime's first /next, i.e. main and
# app.FromEnv) and the first invoke's latency as curl sees it (the cold
# start: init included, the first DynamoDB round trips; for timers and
# worker also the pass itself, which runs to its budget or until idle).
# SMOKE_KEEP=1 keeps the work directory (events, responses, RIE logs);
# SMOKE_FUNCTIONS="api lock" runs only those (lock and append expect the
# execution api submits); SMOKE_BUILD=dir runs the bootstraps in
# dir/<name>/bootstrap instead of building them (to compare builds).
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
RIELOG=
fail() {
	log "FAIL: $*"
	[ -n "$RIELOG" ] && [ -f "$RIELOG" ] && { log "RIE/function log:"; tail -n 40 "$RIELOG" >&2; }
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

# --- tools and artefacts -------------------------------------------------------
FUNCTIONS=(${SMOKE_FUNCTIONS:-api lock append timers worker aws-app-worker})
if [ ! -x "$RIE" ]; then
	log "installing aws-lambda-rie $RIE_VERSION into $TOOLS/bin"
	GOBIN="$TOOLS/bin" go install "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$RIE_VERSION"
fi
HOSTARCH=$(go env GOARCH)
BUILD=${SMOKE_BUILD:-}
if [ -z "$BUILD" ]; then
	BUILD=$WORK/build
	log "building ${FUNCTIONS[*]} for linux/$HOSTARCH"
	GOARCH=$HOSTARCH OUT="$BUILD" scripts/build-lambdas.sh "${FUNCTIONS[@]}" >&2
else
	log "using the bootstraps in $BUILD"
fi

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

# start FN: runs functions/FN's bootstrap under RIE with only what the
# deployed function gets (infra/stack.go) plus the endpoint.
start() {
	FN=$1
	RIELOG=$WORK/rie.$FN.log
	env -i PATH="$PATH" HOME="$WORK" \
		AWS_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" AWS_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
		AWS_REGION="$AWS_REGION" AWS_EC2_METADATA_DISABLED=true \
		AWS_ENDPOINT_URL_DYNAMODB="$AWS_ENDPOINT_URL_DYNAMODB" \
		AWS_LAMBDA_FUNCTION_NAME="smoke-$FN" AWS_LAMBDA_FUNCTION_TIMEOUT=25 AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256 \
		STELA_TABLE="$TABLE" STELA_BUCKET_PREFIX=cas/ STELA_FOLLOW_WAIT=20s STELA_TIMERS_MAX_BUDGET=2s \
		"$RIE" --runtime-interface-emulator-address "127.0.0.1:$RIE_PORT" \
		--runtime-api-address "127.0.0.1:$RIE_API_PORT" "$BUILD/$FN/bootstrap" >"$RIELOG" 2>&1 &
	RIE_PID=$!
	for _ in $(seq 1 100); do
		curl -s -o /dev/null -m 1 "http://127.0.0.1:$RIE_PORT/" && break
		kill -0 "$RIE_PID" 2>/dev/null || fail "RIE exited"
		sleep 0.1
	done
	FIRST= CALLS=0
}

# stop: ends the function's RIE and records its figures.
REPORT=()
stop() {
	kill "$RIE_PID" 2>/dev/null && wait "$RIE_PID" 2>/dev/null
	RIE_PID=
	local size init
	size=$(stat -c %s "$BUILD/$FN/bootstrap")
	# RIE logs the init phase (runtime start to its first /next) as INIT REPORT.
	init=$(sed -n 's/.*INIT REPORT(durationMs: \([0-9.]*\)).*/\1/p' "$RIELOG" | head -n 1)
	REPORT+=("$(printf '%-7s %9d bytes (%4.1f MiB)  init %6.1f ms  cold first invoke %7.1f ms  (%d invokes)' "$FN" "$size" \
		"$(echo "$size / 1048576" | bc -l)" "${init:-0}" "$(echo "${FIRST:-0} * 1000" | bc -l)" "$CALLS")")
}

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

# scheduled: an EventBridge scheduled event.
scheduled() {
	jq -n --arg t "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '{version: "0", id: "smoke", "detail-type": "Scheduled Event",
		source: "aws.events", account: "000000000000", time: $t, region: "us-east-1",
		resources: ["arn:aws:events:us-east-1:000000000000:rule/smoke"], detail: {}}'
}

N=0
# call: sends $WORK/event.json to the running function; sets OUT (the
# response file) and TIME (seconds), FIRST on the first call.
call() {
	OUT=$WORK/resp.$FN.$N.json
	N=$((N + 1)) CALLS=$((CALLS + 1))
	TIME=$(curl -s -o "$OUT" -w '%{time_total}' -m 30 -X POST \
		"http://127.0.0.1:$RIE_PORT/2015-03-31/functions/function/invocations" --data-binary @"$WORK/event.json") ||
		fail "$FN $1: invoke failed"
	[ -n "$FIRST" ] || FIRST=$TIME
	# A function error comes back as HTTP 200 {"errorMessage","errorType"}.
	if jq -e 'has("errorType")' "$OUT" >/dev/null 2>&1; then
		fail "$FN $1: function error $(cat "$OUT")"
	fi
}

# invoke METHOD PATH WANT_STATUS [BODY]: one HTTP invocation; sets RESP
# (the response body, decoded) and TIME (seconds).
invoke() {
	event "$1" "$2" "${4:-}" >"$WORK/event.json"
	call "$1 $2"
	local status
	status=$(jq -r '.statusCode' "$OUT") || fail "$1 $2: not an API Gateway response: $(cat "$OUT")"
	RESP=$(jq -r 'if .isBase64Encoded then (.body|@base64d) else .body end' "$OUT")
	[ "$status" = "$3" ] || fail "$FN $1 $2: status $status, want $3; body $RESP"
	log "$(printf '%-7s %-4s %-52s %s  %6.1f ms' "$FN" "$1" "$2" "$status" "$(echo "$TIME * 1000" | bc -l)")"
}

# invoke_scheduled WHAT: one EventBridge invocation; sets RESP (the result).
invoke_scheduled() {
	scheduled >"$WORK/event.json"
	call "$1"
	RESP=$(cat "$OUT")
	log "$(printf '%-7s %-57s %s  %6.1f ms' "$FN" "$1" "$(echo "$RESP" | jq -c . | cut -c1-60)" "$(echo "$TIME * 1000" | bc -l)")"
}

has() { for f in "${FUNCTIONS[@]}"; do [ "$f" = "$1" ] && return 0; done; return 1; }

FFQN=smoke:pkg/ifc.fn
PARAMS='{"ffqn":"'$FFQN'","params":[1,"two"]}'
ID=
SAMPLE_ID=
if has api; then
	start api
	# The first invoke is the cold start: process start, app.FromEnv (AWS
	# config, clients) and the first DynamoDB round trips of a submit.
	invoke POST /v1/executions 201 "$PARAMS"
	ID=$(echo "$RESP" | jq -r '.ok') || fail "submit answer: $RESP"
	[[ "$ID" == E_* ]] || fail "submit answered $RESP, want {\"ok\":\"E_…\"}"

	invoke GET "/v1/executions/$ID/status" 200
	log "  status: $(echo "$RESP" | jq -c . | cut -c1-300)"
	echo "$RESP" | jq -e --arg id "$ID" 'tostring | contains($id)' >/dev/null || fail "status does not name $ID: $RESP"
	echo "$RESP" | jq -e 'tostring | test("pending"; "i")' >/dev/null || fail "status is not pending: $RESP"

	invoke PUT "/v1/executions/$ID" 200 "$PARAMS"
	invoke PUT "/v1/executions/$ID" 409 '{"ffqn":"'$FFQN'","params":[2]}'
	invoke GET /v1/executions/E_01KDZZZZZZZZZZZZZZZZZZZZZZ/status 404
	invoke GET /openapi.json 200
	echo "$RESP" | jq -e '.openapi | startswith("3.1")' >/dev/null || fail "openapi.json: $RESP"
	if has aws-app-worker; then
		# Work for the sample's worker: its pricing activity.
		invoke POST /v1/executions 201 '{"ffqn":"shop:orders/billing.price","params":[{"id":"o1","item":"book","quantity":3}]}'
		SAMPLE_ID=$(echo "$RESP" | jq -r '.ok')
	fi
	stop
fi

if has lock; then
	start lock
	expires=$(date -u -d '+10 minutes' +%Y-%m-%dT%H:%M:%SZ)
	invoke POST /v1/worker/lock/pending-by-ffqns 200 '{"ffqns": ["'$FFQN'"], "batch_size": 8,
		"component_id": {"component_type": "activity", "name": "smoke",
			"component_digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000"},
		"deployment_id": "Dep_00000000000000000000000000",
		"executor_id": "Exr_01KBNJ2T3D8W7H3X6Q4M9R5V1A", "run_id": "Run_01KBNJ2V0P6C4Y8N2B7K3T5W9E",
		"lock_expires_at": "'"$expires"'", "retry_config": {"max_retries": 0, "retry_exp_backoff": {"secs": 1, "nanos": 0}}}'
	if [ -n "$ID" ]; then
		echo "$RESP" | jq -e --arg id "$ID" 'length == 1 and (.[0].next_version == 2) and (tostring | contains($id))' >/dev/null ||
			fail "lock answered $RESP, want $ID at next_version 2"
	fi
	stop
fi

if has append && [ -n "$ID" ]; then
	start append
	invoke POST /v1/worker/append 200 '{"execution_id": "'"$ID"'", "version": 2,
		"req": {"created_at": "'"$(date -u +%Y-%m-%dT%H:%M:%SZ)"'",
			"event": {"finished": {"retval": {"ok": {"type": "string", "value": "smoked"}}, "http_client_traces": null}}}}'
	stop
fi

if has timers; then
	start timers
	invoke_scheduled "scheduled event (a pass of at most 2 s)"
	echo "$RESP" | jq -e '.passes >= 1 and .failed_passes == 0' >/dev/null || fail "timers answered $RESP"
	stop
fi

if has worker; then
	start worker
	invoke_scheduled "scheduled event (a worker pass)"
	echo "$RESP" | jq -e '.idle == true' >/dev/null || fail "worker answered $RESP"
	stop
fi

if has aws-app-worker; then
	start aws-app-worker
	invoke_scheduled "scheduled event (a pass of the sample's worker)"
	if [ -n "${SAMPLE_ID:-}" ]; then
		echo "$RESP" | jq -e '.idle == true and .activities == 1' >/dev/null || fail "aws-app-worker answered $RESP, want the pricing activity run"
	else
		echo "$RESP" | jq -e '.idle == true' >/dev/null || fail "aws-app-worker answered $RESP"
	fi
	stop
fi

log "figures (linux/$HOSTARCH, RIE on this host, DynamoDB at $AWS_ENDPOINT_URL_DYNAMODB):"
for line in "${REPORT[@]}"; do
	echo "smoke-rie: $line"
done
echo "smoke-rie: PASS (${FUNCTIONS[*]})"
