#!/usr/bin/env bash
# CDK infrastructure checks (the infra/ Go module):
#   1. go vet + the template assertion tests (one test binary, one jsii kernel);
#   2. synthesizes the stack (CDK packaging, SAM packaging, with the
#      optional worker function, with the monitoring options) and lints the
#      templates with cfn-lint (W3005 ignored: CDK's explicit DependsOn; W3002 ignored for the SAM
#      variant: its local Code paths are intended).
#      cfn-lint exit code 4 (warnings only) passes; errors fail.
#   3. the sample application (examples/aws-app, its own module): go vet,
#      the determinism analyzer,
#      its tests (the workflow, the offline synth asserting the worker's
#      least-privilege IAM), a real synth (the constructs build Stela's
#      functions and the worker for linux/arm64) and cfn-lint of its CDK
#      template and of its SAM template (template.yaml).
# The bootstrap binaries are used when built (scripts/build-lambdas.sh),
# otherwise placeholders from a temporary directory. A cold run compiles the
# CDK bindings (~3–4 min, ~1 GB RAM).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT/infra"
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 CDK_DISABLE_VERSION_CHECK=1
export STELA_PLACEHOLDER_ASSETS=1

log() { echo "infra-test: $*" >&2; }

if ! go mod tidy -diff >/dev/null 2>&1; then
	log "infra/go.mod is not tidy (did the runtime module's dependencies change?): run  cd infra && go mod tidy"
	go mod tidy -diff >&2 || true
	exit 1
fi

log "go vet + go test"
go vet ./...
go test -count=1 ./...

OUT=$(mktemp -d "${TMPDIR:-/tmp}/stela-synth.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

lint() { # lint TEMPLATE IGNORED_CHECK...
	local rc=0
	cfn-lint --ignore-checks "${@:2}" -- "$1" || rc=$?
	case $rc in
	0) log "cfn-lint $(basename "$(dirname "$1")"): clean" ;;
	4) log "cfn-lint $(basename "$(dirname "$1")"): warnings only (pass)" ;;
	*) log "cfn-lint $(basename "$(dirname "$1")"): exit $rc (errors)"; return 1 ;;
	esac
}

log "synth (CDK packaging) -> infra/cdk.out"
go run .
lint cdk.out/StelaStack.template.json W3005

log "synth (SAM packaging)"
CDK_OUTDIR="$OUT/sam" CDK_CONTEXT_JSON='{"packaging":"sam"}' go run .
lint "$OUT/sam/StelaStack.template.json" W3005 W3002

log "synth (with the worker function)"
CDK_OUTDIR="$OUT/worker" CDK_CONTEXT_JSON='{"worker":"true"}' go run .
lint "$OUT/worker/StelaStack.template.json" W3005

log "synth (monitoring options: X-Ray, OTLP endpoint, alarm e-mail, thresholds)"
CDK_OUTDIR="$OUT/ops" CDK_CONTEXT_JSON='{"tracing":"xray","otelEndpoint":"http://localhost:4318","alarmEmail":"ops@example.com","alarmSweepLagSeconds":"120"}' go run .
lint "$OUT/ops/StelaStack.template.json" W3005

n=$(jq '.Resources | length' cdk.out/StelaStack.template.json)

log "sample application examples/aws-app: tidy, vet, test, synth, cfn-lint"
cd "$ROOT/examples/aws-app"
if ! go mod tidy -diff >/dev/null 2>&1; then
	log "examples/aws-app/go.mod is not tidy: run  cd examples/aws-app && go mod tidy"
	go mod tidy -diff >&2 || true
	exit 1
fi
go vet ./...
go run github.com/stela-dev/stela/cmd/stela-vet -test=false ./... # the determinism analyzer on its workflows
go test -count=1 ./...
(cd cdk && CDK_OUTDIR="$OUT/aws-app" go run .)
lint "$OUT/aws-app/AwsApp.template.json" W3005
lint template.yaml W3005
m=$(jq '.Resources | length' "$OUT/aws-app/AwsApp.template.json")
log "PASS ($n resources in infra/cdk.out/StelaStack.template.json, $m in the sample's AwsApp)"
