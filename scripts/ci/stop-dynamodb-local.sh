#!/usr/bin/env bash
# Stops the DynamoDB Local started by start-dynamodb-local.sh (by the PID in
# .tools/ddb.pid); a no-op when it is not running.
set -euo pipefail
cd "$(dirname "$0")/../.."
PIDFILE=${TOOLS:-$PWD/.tools}/ddb.pid
[ -f "$PIDFILE" ] || exit 0
PID=$(cat "$PIDFILE")
if kill -0 "$PID" 2>/dev/null; then
	kill "$PID"
	for _ in $(seq 1 50); do
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$PID" 2>/dev/null && kill -9 "$PID" 2>/dev/null || true
	echo "stop-dynamodb-local: stopped pid $PID" >&2
fi
rm -f "$PIDFILE"
