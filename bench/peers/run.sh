#!/usr/bin/env bash
# Runs Stela's peer-harness engine (bench/peers/stelasdk: the public Go SDK, one
# worker, Options.Concurrency = the harness's -concurrency) beside DBOS, River and
# go-workflows in ONE run on this machine, then prints the ratio table
# (bench/peers/ratio). The harness itself is not part of this repository: it lives
# in the Stela workspace beside the checkout (../shared/bench-peers) or wherever
# PEERS points.
#
#   bench/peers/run.sh                                   # 3 rounds, concurrency 8
#   BENCH_ARGS="-concurrency 64" bench/peers/run.sh      # concurrency 64
#   ROUNDS=5 ENGINES="dbos stelasdk" bench/peers/run.sh  # fewer engines
#
# Needs Debian's postgresql package for DBOS and River (the harness starts it).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PEERS=${PEERS:-$ROOT/../shared/bench-peers}
[ -d "$PEERS" ] || { echo "run.sh: no peer harness at $PEERS (set PEERS)" >&2; exit 2; }
WORK=${WORK:-/tmp/bench-peers-stela}
rm -rf "$WORK"
cp -r "$PEERS" "$WORK"
chmod -R u+w "$WORK"
rm -rf "$WORK/stelasdk"
cp -r "$ROOT/bench/peers/stelasdk" "$WORK/stelasdk"
export ROUNDS=${ROUNDS:-3} EXTRAS=${EXTRAS:-0}
export ENGINES=${ENGINES:-dbos river goworkflows stelasdk}
(cd "$WORK" && STELA_SRC="$ROOT" ./run.sh)
latest=$(ls -t "$WORK"/results/*.jsonl | head -1)
cp "$latest" "$ROOT/bench/peers/results/" 2>/dev/null || { mkdir -p "$ROOT/bench/peers/results" && cp "$latest" "$ROOT/bench/peers/results/"; }
(cd "$ROOT/bench/peers/ratio" && go run . "$latest")
