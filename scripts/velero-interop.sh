#!/usr/bin/env bash
# The by-hand check that Velero reads ark's backups and ark reads Velero's (README, "Velero
# compatibility"). Velero runs as a local process against the second local cluster, whose four
# velero.io CRDs it replaces with its own; ark runs against the first. Both use one SeaweedFS
# bucket prefix. Not part of the tests: it needs Velero built (scripts/velero-build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

velero_bin="$(bash scripts/velero-build.sh)"
bash scripts/cluster.sh up >/dev/null
cargo build -q -p ark
set -a; source .cluster/cluster.env; set +a
first="$PWD/.cluster/kubeconfig"
second="$PWD/.cluster/second/kubeconfig"
ark="$PWD/target/debug/ark"
velero="$velero_bin/velero"
work="$(mktemp -d)"
prefix="interop-$(date +%s)"
ns=interop
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
step() { printf '\n$ %s\n' "$*"; "$@"; }

printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$ARK_S3_ACCESS_KEY" "$ARK_S3_SECRET_KEY" >"$work/credentials"
config="region=us-east-1,s3Url=$ARK_S3_ENDPOINT,s3ForcePathStyle=true"

# Velero puts a finalizer on its Restores that only its server removes: without the server, the
# namespace would never go.
clean() {
  for restore in $(kubectl --kubeconfig "$second" -n $ns get restores.velero.io -o name 2>/dev/null); do
    kubectl --kubeconfig "$second" -n $ns patch "$restore" --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null
  done
  for kc in "$first" "$second"; do
    kubectl --kubeconfig "$kc" delete namespace shop shop-from-velero $ns --ignore-not-found --wait >/dev/null
  done
}
clean

# Velero's own CRDs on the second cluster, and Velero's server there.
"$velero" install --crds-only --dry-run -o yaml | kubectl --kubeconfig "$second" apply --server-side --force-conflicts -f - >/dev/null
for kc in "$first" "$second"; do
  kubectl --kubeconfig "$kc" create namespace $ns --dry-run=client -o yaml | kubectl --kubeconfig "$kc" apply -f - >/dev/null
  kubectl --kubeconfig "$kc" -n $ns create secret generic cloud-credentials --from-file=cloud="$work/credentials" \
    --dry-run=client -o yaml | kubectl --kubeconfig "$kc" apply -f - >/dev/null
done
mkdir -p "$work/plugins"; cp "$velero_bin/velero-plugin-for-aws" "$work/plugins/"
# Velero looks up its own Deployment (for its image and settings); running as a local process, it
# gets a stand-in on the kwok node.
kubectl --kubeconfig "$second" -n $ns create deployment velero --image=velero/velero:v1.18.3 \
  --dry-run=client -o yaml | kubectl --kubeconfig "$second" apply -f - >/dev/null
kubectl --kubeconfig "$second" -n $ns patch deployment velero --type merge \
  -p '{"spec":{"template":{"spec":{"nodeSelector":{"type":"kwok"}}}}}' >/dev/null
KUBECONFIG="$second" "$velero" -n $ns backup-location create default --provider aws --bucket "$ARK_S3_BUCKET" \
  --prefix "$prefix" --config "$config" --credential cloud-credentials=cloud --default
AWS_SHARED_CREDENTIALS_FILE="$work/credentials" KUBECONFIG="$second" "$velero" server -n $ns \
  --plugin-dir "$work/plugins" --metrics-address 127.0.0.1:18085 --profiler-address 127.0.0.1:16060 \
  --backup-sync-period 5s --store-validation-frequency 5s >"$work/velero-server.log" 2>&1 &
KUBECONFIG="$first" "$ark" -n $ns backup-location create default --provider aws --bucket "$ARK_S3_BUCKET" \
  --prefix "$prefix" --config "$config" --credential cloud-credentials=cloud --default
KUBECONFIG="$first" "$ark" -n $ns server --backup-sync-period 5s --store-validation-frequency 5s 2>"$work/ark-server.log" &

# ark -> Velero: ark backs up the shop on the first cluster, Velero restores it on the second.
kubectl --kubeconfig "$first" apply -f examples/shop.yaml >/dev/null
kubectl --kubeconfig "$first" -n shop wait --for=condition=Available deployment/web --timeout=60s >/dev/null
step env KUBECONFIG="$first" "$ark" -n $ns backup create from-ark --include-namespaces shop --wait
for _ in $(seq 1 60); do
  KUBECONFIG="$second" "$velero" -n $ns backup get from-ark >/dev/null 2>&1 && break; sleep 1
done
step env KUBECONFIG="$second" "$velero" -n $ns backup get from-ark
step env KUBECONFIG="$second" "$velero" -n $ns backup describe from-ark --details
step env KUBECONFIG="$second" "$velero" -n $ns restore create velero-restores-ark --from-backup from-ark --wait
step env KUBECONFIG="$second" "$velero" -n $ns restore describe velero-restores-ark
step kubectl --kubeconfig "$second" -n shop get deployment,pods,service,configmap,secret,serviceaccount

# Velero -> ark: Velero backs up the shop on the second cluster, ark restores it on the first as shop-from-velero.
step env KUBECONFIG="$second" "$velero" -n $ns backup create from-velero --include-namespaces shop --wait
for _ in $(seq 1 60); do
  KUBECONFIG="$first" "$ark" -n $ns backup get from-velero >/dev/null 2>&1 && break; sleep 1
done
step env KUBECONFIG="$first" "$ark" -n $ns backup get from-velero
step env KUBECONFIG="$first" "$ark" -n $ns restore create ark-restores-velero --from-backup from-velero \
  --namespace-mappings shop:shop-from-velero --wait
step env KUBECONFIG="$first" "$ark" -n $ns restore describe ark-restores-velero --details
step kubectl --kubeconfig "$first" -n shop-from-velero get deployment,pods,service,configmap,secret,serviceaccount

# Leave the clusters as the tests expect them: ark's CRDs on both.
kubectl --kubeconfig "$second" apply --server-side --force-conflicts -f config/crd/ >/dev/null
kill $(jobs -p) 2>/dev/null || true
clean
echo; echo "velero-interop: logs in $work"
