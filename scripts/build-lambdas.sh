#!/usr/bin/env bash
# Builds the Lambda functions (functions/<name>/main.go; `worker` is the
# example worker examples/lambda-worker, `aws-app-worker` the sample
# application's examples/aws-app/cmd/worker, built in its own module) as
# `bootstrap` binaries for the provided.al2023 runtime into infra/build/<name>/bootstrap,
# where the CDK stack (infra/) packages them, and prints their sizes.
#
#   scripts/build-lambdas.sh                 # all five, linux/arm64 (Graviton)
#   scripts/build-lambdas.sh api timers      # only these
#   GOARCH=amd64 OUT=/tmp/x scripts/build-lambdas.sh api   # e.g. for RIE on this host
#
# -tags lambda.norpc drops the legacy net/rpc runtime (not used by
# provided.al2023); -trimpath and -s -w make the binaries smaller and
# reproducible. TAGS adds build tags.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/infra/build}
GOARCH=${GOARCH:-arm64}
TAGS=${TAGS:-}
FUNCTIONS=("$@")
[ ${#FUNCTIONS[@]} -gt 0 ] || FUNCTIONS=(api lock append timers worker)

# source NAME: the module directory and the package of function NAME.
source_of() {
	case $1 in
	worker) echo ". ./examples/lambda-worker" ;;
	aws-app-worker) echo "examples/aws-app ./cmd/worker" ;;
	*) echo ". ./functions/$1" ;;
	esac
}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$ROOT"
for fn in "${FUNCTIONS[@]}"; do
	read -r mod pkg < <(source_of "$fn")
	if [ ! -f "$mod/$pkg/main.go" ]; then
		echo "build-lambdas: $mod/$pkg/main.go does not exist" >&2
		exit 1
	fi
	mkdir -p "$OUT/$fn"
	start=$(date +%s.%N)
	(cd "$mod" && CGO_ENABLED=0 GOOS=linux GOARCH="$GOARCH" go build -tags "lambda.norpc $TAGS" -trimpath -ldflags "-s -w" \
		-o "$OUT/$fn/bootstrap" "$pkg")
	end=$(date +%s.%N)
	size=$(stat -c %s "$OUT/$fn/bootstrap")
	printf '%-8s linux/%-5s %10d bytes (%5.1f MiB)  %5.1f s  %s\n' "$fn" "$GOARCH" "$size" \
		"$(echo "$size / 1048576" | bc -l)" "$(echo "$end - $start" | bc -l)" "${OUT#"$ROOT"/}/$fn/bootstrap"
done
