#!/usr/bin/env bash
# The main job, end to end on the local cluster: back up a namespace to S3 (SeaweedFS), lose it,
# restore it, and restore a copy under another name.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh >/dev/null
bash scripts/cluster.sh up
set -a; source .cluster/cluster.env; set +a
ark=target/debug/ark
export ARK_NAMESPACE=ark-demo

step() { printf '\n$ %s\n' "$*"; "$@"; }
kubectl delete namespace shop shop-copy "$ARK_NAMESPACE" --ignore-not-found --wait >/dev/null
kubectl create namespace "$ARK_NAMESPACE" >/dev/null
kubectl -n "$ARK_NAMESPACE" create secret generic cloud-credentials --from-literal=cloud="[default]
aws_access_key_id = $ARK_S3_ACCESS_KEY
aws_secret_access_key = $ARK_S3_SECRET_KEY" >/dev/null

$ark server --backup-sync-period 10s --store-validation-frequency 10s 2>.cluster/demo-server.log &
server=$!
trap 'kill $server' EXIT

step $ark backup-location create default --default --provider aws --bucket "$ARK_S3_BUCKET" \
  --prefix "demo-$(date +%s)" --config "region=us-east-1,s3Url=$ARK_S3_ENDPOINT,s3ForcePathStyle=true" \
  --credential cloud-credentials=cloud
kubectl apply -f examples/shop.yaml >/dev/null
kubectl -n shop wait --for=condition=Available deployment/web --timeout=60s >/dev/null
step kubectl -n shop get pods
step $ark backup create nightly --include-namespaces shop --wait
step $ark backup describe nightly --details
step kubectl delete namespace shop --wait
step $ark restore create --from-backup nightly --wait
step kubectl -n shop get deployment,pods,service,configmap,secret,serviceaccount
step $ark restore create copy --from-backup nightly --namespace-mappings shop:shop-copy --wait
step $ark restore get
step $ark backup-location get
