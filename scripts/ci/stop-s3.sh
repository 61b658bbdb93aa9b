#!/usr/bin/env bash
# Stops the gofakes3 started by start-s3.sh (PID from .tools/gofakes3.pid).
# It only signals that PID, and only if it still is a gofakes3 process.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TOOLS=${TOOLS:-$ROOT/.tools}
PIDFILE=$TOOLS/gofakes3.pid

log() { echo "stop-s3: $*" >&2; }

if [ ! -f "$PIDFILE" ]; then
	log "no $PIDFILE; nothing to stop"
	exit 0
fi
pid=$(cat "$PIDFILE")
if ! [ -r "/proc/$pid/cmdline" ] || ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q gofakes3; then
	log "pid $pid is not a running gofakes3; removing stale $PIDFILE"
	rm -f "$PIDFILE"
	exit 0
fi
kill "$pid"
for _ in $(seq 1 50); do # about 5 s
	if ! kill -0 "$pid" 2>/dev/null; then
		rm -f "$PIDFILE"
		log "stopped gofakes3 (pid $pid)"
		exit 0
	fi
	sleep 0.1
done
log "gofakes3 (pid $pid) did not exit after SIGTERM; sending SIGKILL"
kill -9 "$pid" 2>/dev/null || true
rm -f "$PIDFILE"
