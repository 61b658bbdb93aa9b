#!/usr/bin/env bash
# Starts a standalone S3 emulator (gofakes3 v1.2.0, in-memory) on
# 127.0.0.1:${S3_PORT:-9000} in the background and prints the environment
# the tests need, so that CI can run:
#
#   eval "$(scripts/ci/start-s3.sh)"
#   go test ./cas/
#   scripts/ci/stop-s3.sh
#
# Only `export …` lines go to stdout; everything else goes to stderr. The
# binary is installed into .tools/bin on first use, the PID is written to
# .tools/gofakes3.pid and the server log to .tools/gofakes3.log. If the PID
# file names a live gofakes3 that answers on the port, it is reused.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TOOLS=${TOOLS:-$ROOT/.tools}
PORT=${S3_PORT:-9000}
BIN=$TOOLS/bin/gofakes3
PIDFILE=$TOOLS/gofakes3.pid
LOG=$TOOLS/gofakes3.log
URL=http://127.0.0.1:$PORT

log() { echo "start-s3: $*" >&2; }

answers() { curl -s -o /dev/null --max-time 1 "$URL/"; }

# kill -0 also succeeds for a zombie, so look at the process state too.
alive() { kill -0 "$1" 2>/dev/null && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }

is_gofakes3() { [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -q gofakes3; }

print_env() {
	echo "export AWS_ENDPOINT_URL_S3=$URL"
	# gofakes3 does not check credentials, but the SDK needs some; keep any
	# the caller already has.
	[ -n "${AWS_ACCESS_KEY_ID:-}" ] || echo "export AWS_ACCESS_KEY_ID=test"
	[ -n "${AWS_SECRET_ACCESS_KEY:-}" ] || echo "export AWS_SECRET_ACCESS_KEY=test"
	[ -n "${AWS_REGION:-}${AWS_DEFAULT_REGION:-}" ] || echo "export AWS_REGION=us-east-1"
}

mkdir -p "$TOOLS/bin"

if [ -f "$PIDFILE" ]; then
	pid=$(cat "$PIDFILE")
	if is_gofakes3 "$pid"; then
		if answers; then
			log "gofakes3 already running (pid $pid) on $URL"
			print_env
			exit 0
		fi
		log "gofakes3 (pid $pid) from an earlier start does not answer on $URL; run scripts/ci/stop-s3.sh first"
		exit 1
	fi
	rm -f "$PIDFILE"
fi

if answers; then
	log "something else already answers on $URL; set S3_PORT to another port"
	exit 1
fi

if [ ! -x "$BIN" ]; then
	log "installing gofakes3 v1.2.0 into $TOOLS/bin"
	(cd "$ROOT" && GOBIN="$TOOLS/bin" go install github.com/johannesboyne/gofakes3/cmd/gofakes3@v1.2.0) >&2
fi

# Detach stdin/stdout/stderr, or `eval "$(…)"` would wait for the server.
"$BIN" -backend memory -host "127.0.0.1:$PORT" -quiet -autobucket </dev/null >"$LOG" 2>&1 &
pid=$!
echo "$pid" >"$PIDFILE"

for _ in $(seq 1 100); do # about 10 s
	if ! alive "$pid"; then
		log "gofakes3 exited during startup; log follows"
		cat "$LOG" >&2
		rm -f "$PIDFILE"
		exit 1
	fi
	if answers; then
		log "gofakes3 (pid $pid) ready on $URL"
		print_env
		exit 0
	fi
	sleep 0.1
done

log "gofakes3 (pid $pid) did not answer on $URL within 10 s; stopping it"
kill "$pid" 2>/dev/null || true
rm -f "$PIDFILE"
exit 1
