#!/usr/bin/env bash
# The size budget of the Lambda artefacts: builds every function exactly as
# for deployment (scripts/build-lambdas.sh: linux/arm64, -trimpath, -s -w,
# the default build, tracing included) and fails when one is larger than
# SIZE_BUDGET bytes (default 12 MiB), printing what it is made of (the
# sections, the top modules and packages: internal/tools/binsize on an
# unstripped build of it). docs/deploy.md, "What a function links", says
# what each function links and why.
#
#   scripts/ci/size-budget.sh                  # all six (with the sample worker, examples/aws-app)
#   SIZE_BUDGET=11000000 scripts/ci/size-budget.sh api
#   SIZE_REPORT=1 scripts/ci/size-budget.sh    # the contributors of every function, within budget too
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BUDGET=${SIZE_BUDGET:-12582912}
GOARCH=${GOARCH:-arm64}
FUNCTIONS=("$@")
[ ${#FUNCTIONS[@]} -gt 0 ] || FUNCTIONS=(api lock append timers worker aws-app-worker)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/stela-size.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

GOARCH=$GOARCH OUT="$WORK" scripts/build-lambdas.sh "${FUNCTIONS[@]}" >/dev/null
over=()
printf 'size-budget: linux/%s, budget %d bytes (%.2f MiB)\n' "$GOARCH" "$BUDGET" "$(echo "$BUDGET / 1048576" | bc -l)"
for fn in "${FUNCTIONS[@]}"; do
	size=$(stat -c %s "$WORK/$fn/bootstrap")
	left=$((BUDGET - size))
	verdict=ok
	if [ "$left" -lt 0 ]; then
		verdict="OVER BUDGET"
		over+=("$fn")
	fi
	printf '  %-8s %10d bytes (%5.2f MiB)  headroom %9d bytes  %s\n' "$fn" "$size" \
		"$(echo "$size / 1048576" | bc -l)" "$left" "$verdict"
done

report=("${over[@]}")
[ "${SIZE_REPORT:-0}" = 1 ] && report=("${FUNCTIONS[@]}")
for fn in "${report[@]}"; do
	# The same build with its symbol table, for the attribution.
	case $fn in
	worker) mod=. pkg=./examples/lambda-worker ;;
	aws-app-worker) mod=examples/aws-app pkg=./cmd/worker ;;
	*) mod=. pkg=./functions/$fn ;;
	esac
	(cd "$mod" && CGO_ENABLED=0 GOOS=linux GOARCH="$GOARCH" go build -tags lambda.norpc -trimpath -o "$WORK/$fn.full" "$pkg")
	echo
	echo "== $mod/$pkg ($fn): what it is made of (unstripped build; the stripped one drops the symbol tables)"
	go run ./internal/tools/binsize -top 15 "$WORK/$fn.full"
done
if [ ${#over[@]} -gt 0 ]; then
	echo "size-budget: FAIL: ${over[*]} above $BUDGET bytes" >&2
	exit 1
fi
echo "size-budget: PASS"
