#!/usr/bin/env bash
# Runs Stela's integration tests (the DynamoDB and S3 contract suites, the
# functions, the end-to-end test) against an emulated AWS:
#
#   * per-service endpoints already exported — AWS_ENDPOINT_URL_DYNAMODB and
#     AWS_ENDPOINT_URL_S3, as CI does for DynamoDB Local + gofakes3
#     (scripts/ci/start-dynamodb-local.sh, scripts/ci/start-s3.sh) — are used
#     as they are;
#   * otherwise one endpoint for both services: AWS_ENDPOINT_URL, default
#     http://localhost:4566 (LocalStack from localstack/docker-compose.yml;
#     moto_server works too).
#
#   localstack/run-tests.sh                   # all integration packages
#   localstack/run-tests.sh -run TestS3 -v    # extra `go test` flags
#   STELA_TEST_PACKAGES="./cas/..." localstack/run-tests.sh
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
log "go test ${pkgs[*]} $*"
exec go test -count=1 "$@" "${pkgs[@]}"
