#!/usr/bin/env bash
# Makes sure a C compiler is on PATH for the race detector (go test -race
# needs cgo): keeps the one found, else installs Debian's gcc. Exits
# non-zero if it cannot, so CI fails instead of leaving the race step out.
set -euo pipefail

log() { echo "install-cc: $*" >&2; }

if command -v "$(go env CC)" >/dev/null 2>&1; then
	log "using $(command -v "$(go env CC)")"
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	log "no C compiler and no apt-get: install gcc"
	exit 1
fi
SUDO=
if [ "$(id -u)" != 0 ]; then
	SUDO=sudo
fi
log "installing Debian's gcc (apt-get)"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq --no-install-recommends gcc libc6-dev >&2
command -v "$(go env CC)" >/dev/null || { log "apt-get finished but $(go env CC) is not on PATH"; exit 1; }
log "installed $(command -v "$(go env CC)")"
