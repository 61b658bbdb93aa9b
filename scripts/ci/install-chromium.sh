#!/usr/bin/env bash
# Installs headless Chromium (Debian's `chromium` package) for the web
# console's browser tests (e2e/console_test.go) and prints the path of the
# binary. Idempotent: a Chromium already on PATH (or named by
# $STELA_CHROMIUM) is kept. Exits non-zero if it cannot install one, so CI
# fails instead of skipping the browser tests.
set -euo pipefail

log() { echo "install-chromium: $*" >&2; }

found() {
	if [ -n "${STELA_CHROMIUM:-}" ] && [ -x "$STELA_CHROMIUM" ]; then
		echo "$STELA_CHROMIUM"
		return 0
	fi
	command -v chromium || command -v chromium-browser || return 1
}

if path=$(found); then
	log "using $path ($("$path" --version 2>/dev/null || echo 'version unknown'))"
	echo "$path"
	exit 0
fi

if ! command -v apt-get >/dev/null; then
	log "no Chromium and no apt-get: install Chromium and set STELA_CHROMIUM"
	exit 1
fi
SUDO=
if [ "$(id -u)" != 0 ]; then
	SUDO=sudo
fi
log "installing Debian's chromium (apt-get)"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-liberation fonts-dejavu-core >&2

if ! path=$(found); then
	log "apt-get finished but no chromium binary is on PATH"
	exit 1
fi
log "installed $path ($("$path" --version 2>/dev/null || echo 'version unknown'))"
echo "$path"
