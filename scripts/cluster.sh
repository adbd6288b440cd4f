#!/usr/bin/env bash
# The local test cluster: kube-apiserver + etcd + kube-controller-manager + kube-scheduler with kwok as
# the kubelet (through kwokctl's binary runtime), and SeaweedFS as S3, all on 127.0.0.1.
#   scripts/cluster.sh up      build (first time only) and start; a no-op when already running
#   scripts/cluster.sh down    stop every process `up` started and remove the state
#   scripts/cluster.sh status  say what runs
# Tests read $ARK_CLUSTER_STATE/cluster.env (default: .cluster/ in the repository).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
source "$here/cluster-versions.sh"

state="${ARK_CLUSTER_STATE:-$repo/.cluster}"
bin="$ARK_CLUSTER_CACHE/bin"
weed="$ARK_CLUSTER_CACHE/venv/bin/weed"
cluster_name=ark
export KWOK_WORKDIR="$state/kwok"
kubeconfig="$state/kubeconfig"
s3_port="${ARK_S3_PORT:-8333}"
s3_bucket=ark-test
s3_access_key=ark-test-access
s3_secret_key=ark-test-secret-0123456789

say() { echo "cluster: $*" >&2; }
fail() {
  echo "cluster: FAILED: $1${2:+ (log: $2)}" >&2
  [ -n "${2:-}" ] && [ -f "$2" ] && tail -n 20 "$2" >&2
  exit 1
}

apiserver_up() {
  [ -f "$kubeconfig" ] && kubectl --kubeconfig "$kubeconfig" get --raw /readyz >/dev/null 2>&1
}

s3_up() {
  [ -f "$state/weed.pid" ] && kill -0 "$(cat "$state/weed.pid")" 2>/dev/null &&
    curl -s -o /dev/null "http://127.0.0.1:$s3_port/"
}

start_kubernetes() {
  if apiserver_up; then
    say "kubernetes already running"
    return
  fi
  # A half-started cluster from an earlier run is removed before starting anew.
  "$bin/kwokctl" --name "$cluster_name" delete cluster >/dev/null 2>&1 || true
  mkdir -p "$state"
  say "starting kube-apiserver, etcd, controller-manager, scheduler and kwok"
  local log="$state/kwokctl-create.log"
  PATH="$bin:$PATH" "$bin/kwokctl" --name "$cluster_name" create cluster \
    --runtime binary \
    --kube-apiserver-binary "$bin/kube-apiserver" \
    --kube-controller-manager-binary "$bin/kube-controller-manager" \
    --kube-scheduler-binary "$bin/kube-scheduler" \
    --etcd-binary "$bin/etcd" \
    --kwok-controller-binary "$bin/kwok" \
    --kube-authorization=true \
    --enable-crds Exec,ClusterExec \
    --kubeconfig "$kubeconfig" \
    --wait 3m >"$log" 2>&1 || fail "kwokctl create cluster" "$log"
  "$bin/kwokctl" --name "$cluster_name" scale node --replicas 1 >>"$log" 2>&1 ||
    fail "kwokctl scale node" "$log"
}

install_crds() {
  local log="$state/crds.log"
  {
    kubectl --kubeconfig "$kubeconfig" apply --server-side -f "$repo/config/crd/"
    kubectl --kubeconfig "$kubeconfig" wait --for condition=Established --timeout 60s \
      -f "$repo/config/crd/"
    kubectl --kubeconfig "$kubeconfig" create namespace velero --dry-run=client -o yaml |
      kubectl --kubeconfig "$kubeconfig" apply -f -
  } >"$log" 2>&1 || fail "installing ark's CRDs" "$log"
}

start_s3() {
  if s3_up; then
    say "SeaweedFS S3 already running on 127.0.0.1:$s3_port"
    return
  fi
  say "starting SeaweedFS S3 on 127.0.0.1:$s3_port"
  mkdir -p "$state/weed"
  local log="$state/weed.log"
  AWS_ACCESS_KEY_ID="$s3_access_key" AWS_SECRET_ACCESS_KEY="$s3_secret_key" \
    setsid "$weed" mini -dir="$state/weed" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    -s3.port="$s3_port" -admin.ui=false -webdav=false -bucket="$s3_bucket" \
    >"$log" 2>&1 </dev/null &
  echo $! >"$state/weed.pid"
  for _ in $(seq 1 120); do
    # The bucket exists once an authenticated request would not say NoSuchBucket; an anonymous
    # request is answered (AccessDenied) as soon as the gateway listens.
    if curl -s "http://127.0.0.1:$s3_port/$s3_bucket" | grep -q "AccessDenied"; then
      return
    fi
    kill -0 "$(cat "$state/weed.pid")" 2>/dev/null || fail "SeaweedFS exited" "$log"
    sleep 0.5
  done
  fail "SeaweedFS did not answer on 127.0.0.1:$s3_port within 60s" "$log"
}

write_env() {
  cat >"$state/cluster.env" <<ENV
KUBECONFIG=$kubeconfig
ARK_S3_ENDPOINT=http://127.0.0.1:$s3_port
ARK_S3_BUCKET=$s3_bucket
ARK_S3_ACCESS_KEY=$s3_access_key
ARK_S3_SECRET_KEY=$s3_secret_key
ARK_KWOK_NODE=node-000000
ENV
}

case "${1:-}" in
  up)
    start=$(date +%s)
    bash "$here/cluster-build.sh"
    start_kubernetes
    install_crds
    start_s3
    write_env
    say "ready in $(($(date +%s) - start))s: export \$(cat $state/cluster.env)"
    ;;
  down)
    if [ -d "$KWOK_WORKDIR" ]; then
      "$bin/kwokctl" --name "$cluster_name" delete cluster >/dev/null 2>&1 || true
    fi
    if [ -f "$state/weed.pid" ]; then
      pid=$(cat "$state/weed.pid")
      kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -9 -- "-$pid" 2>/dev/null || true
    fi
    rm -rf "$state"
    say "stopped and removed $state"
    ;;
  status)
    if apiserver_up; then say "kubernetes: running ($kubeconfig)"; else say "kubernetes: not running"; fi
    if s3_up; then say "s3: running on 127.0.0.1:$s3_port"; else say "s3: not running"; fi
    apiserver_up && s3_up
    ;;
  *)
    echo "usage: $0 up|down|status" >&2
    exit 2
    ;;
esac
