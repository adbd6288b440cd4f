#!/usr/bin/env bash
# The main job, end to end on the local cluster: start it, then drive `ark` against it.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh >/dev/null
bash scripts/cluster.sh up
set -a; source .cluster/cluster.env; set +a
ark=target/debug/ark

step() { printf '\n$ %s\n' "$*"; "$@"; }
step $ark version
kubectl apply -f examples/backup.yaml >/dev/null
step $ark backup get
step $ark backup get nightly -o yaml
