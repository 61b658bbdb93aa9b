#!/usr/bin/env bash
# Runs Stela's integration tests (the DynamoDB and S3 contract suites, the
# functions, the end-to-end test) against an emulated AWS:
#
#   * per-service endpoints already exported — AWS_ENDPOINT_URL_DYNAMODB and
#     AWS_ENDPOINT_URL_S3, as CI does for DynamoDB Local + gofakes3
#     (scripts/ci/start-dynamodb-local.sh, scripts/ci/start-s3.sh) — are used
#     as they are;
#   * otherwise one endpoint for both services: AWS_ENDPOINT_URL, default
#     http://localhost:4566 (LocalStack from localstack/docker-compose.yml,
#     or moto_server — with the exception below).
#
# First it checks that the DynamoDB endpoint isolates concurrent conditional
# transactions as AWS documents (localstack/isolation). Where it does not —
# moto_server, whose TransactWriteItems takes no lock and rolls a cancelled
# transaction back by restoring a copy of the whole table, erasing writes
# other requests committed meanwhile — the contract race tests
# (TestContract/Races) cannot hold and are reported as not applicable to
# that emulator, with the reason, instead of run (localstack/README.md).
#
#   localstack/run-tests.sh                   # all integration packages
#   localstack/run-tests.sh -run TestS3 -v    # extra `go test` flags
#   STELA_TEST_PACKAGES="./cas/..." localstack/run-tests.sh
#   STELA_RUN_TESTS_DRY_RUN=1 localstack/run-tests.sh  # print the go test command, don't run it
#
# CI=true is set, so a test that finds no endpoint fails instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."

export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test}
export AWS_REGION=${AWS_REGION:-${AWS_DEFAULT_REGION:-us-east-1}}
export AWS_DEFAULT_REGION=${AWS_DEFAULT_REGION:-$AWS_REGION}
export AWS_EC2_METADATA_DISABLED=true

log() { echo "run-tests: $*" >&2; }

# answers URL: any HTTP response at all (emulators answer / with 4xx).
answers() { curl -s -o /dev/null -m 3 "$1/"; }

if [ -n "${AWS_ENDPOINT_URL_DYNAMODB:-}" ] && [ -n "${AWS_ENDPOINT_URL_S3:-}" ]; then
	mode="per-service endpoints"
else
	url=${AWS_ENDPOINT_URL:-http://localhost:4566}
	if curl -sf -m 3 "$url/_localstack/health" >/dev/null 2>&1; then
		mode="LocalStack at $url"
	elif answers "$url"; then
		mode="single endpoint at $url (not LocalStack)"
	else
		log "nothing answers at $url."
		log "Start LocalStack:  docker compose -f localstack/docker-compose.yml up -d --wait"
		log "or, without Docker, the CI emulators:"
		log '  eval "$(scripts/ci/start-dynamodb-local.sh)"; eval "$(scripts/ci/start-s3.sh)"'
		exit 1
	fi
	export AWS_ENDPOINT_URL_DYNAMODB=${AWS_ENDPOINT_URL_DYNAMODB:-$url}
	export AWS_ENDPOINT_URL_S3=${AWS_ENDPOINT_URL_S3:-$url}
fi
# Only the per-service variables from here on: the global one would also
# redirect the in-process emulators some tests start for themselves.
unset AWS_ENDPOINT_URL
for ep in "$AWS_ENDPOINT_URL_DYNAMODB" "$AWS_ENDPOINT_URL_S3"; do
	if ! answers "$ep"; then
		log "endpoint $ep does not answer"
		exit 1
	fi
done
log "$mode: DynamoDB $AWS_ENDPOINT_URL_DYNAMODB, S3 $AWS_ENDPOINT_URL_S3"

if [ -n "${STELA_TEST_PACKAGES:-}" ]; then
	read -r -a pkgs <<<"$STELA_TEST_PACKAGES"
else
	pkgs=()
	for d in dynamo cas functions e2e; do
		[ -d "$d" ] && pkgs+=("./$d/...")
	done
fi
export CI=true

# The isolation check (a few seconds; run even for a subset of packages, so
# that its verdict is always printed).
skip=()
races_na() {
	log "NOT APPLICABLE to this emulator: TestContract/Races (skipped, not run)."
	log "  reason: $*"
	skip=(-skip 'TestContract/Races')
}
moto=""
if curl -sf -m 3 "$AWS_ENDPOINT_URL_DYNAMODB/moto-api/" 2>/dev/null | grep -qi moto; then
	moto="moto_server"
fi
log "checking that $AWS_ENDPOINT_URL_DYNAMODB isolates concurrent transactions (localstack/isolation)"
if check=$(go test -count=1 -run '^TestConcurrentTransactionsAreIsolated$' ./localstack/isolation/ 2>&1); then
	log "  isolated: ok"
	if [ -n "$moto" ]; then
		races_na "the endpoint is moto_server, whose TransactWriteItems is not isolated (it passed the check this time by chance:" \
			"moto's transact_write_items takes no lock and undoes a cancelled transaction by restoring a whole-table copy)"
	fi
else
	echo "$check" | grep -E 'isolation_test.go|FAIL|ok ' | sed 's/^/run-tests:   /' >&2
	races_na "${moto:-this endpoint} does not isolate concurrent conditional transactions (check above):" \
		"DynamoDB promises serializable TransactWriteItems, and the race tests assert exactly that" \
		"(two writers, one guard: exactly one wins). See localstack/README.md."
fi

if [ "${STELA_RUN_TESTS_DRY_RUN:-0}" = 1 ]; then
	echo "go test -count=1 ${skip[*]} $* ${pkgs[*]}"
	exit 0
fi
log "go test ${skip[*]} ${pkgs[*]} $*"
exec go test -count=1 "${skip[@]}" "$@" "${pkgs[@]}"
