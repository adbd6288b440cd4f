#!/usr/bin/env bash
# The local test clusters: kube-apiserver + etcd + kube-controller-manager + kube-scheduler with kwok as
# the kubelet (through kwokctl's binary runtime) and, in the first, one real node whose pods really
# run (scripts/node.sh), with a CSI driver and the snapshot controllers (scripts/csi.sh), and the
# storage servers (SeaweedFS as S3, Azurite as Azure Blob), all on 127.0.0.1. A second,
# smaller-footprint cluster beside the first (same storage) is where migration tests restore to.
#   scripts/cluster.sh up      build (first time only) and start; a no-op when already running,
#                              and a component that stopped (say, a controller-manager that lost
#                              its lease while etcd paused) is started again
#   scripts/cluster.sh up demo only what scripts/demo.sh uses: the first cluster and its real node
#                              (all of `up` when the second cluster runs already)
#   scripts/cluster.sh down    stop every process `up` started and remove the state
#   scripts/cluster.sh status  say what runs
# Tests read $ARK_CLUSTER_STATE/cluster.env and $ARK_CLUSTER_STATE/second/cluster.env (default
# state: .cluster/ in the repository).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
source "$here/cluster-versions.sh"

state="${ARK_CLUSTER_STATE:-$repo/.cluster}"
bin="$ARK_CLUSTER_CACHE/bin"
weed="$ARK_CLUSTER_CACHE/venv/bin/weed"
s3_port="${ARK_S3_PORT:-8333}"
s3_bucket=ark-test
kwok_nodes="${ARK_KWOK_NODES:-4}"
s3_access_key=ark-test-access
s3_secret_key=ark-test-secret-0123456789
azure_port="${ARK_AZURE_PORT:-10000}"
# Azurite's well-known development account.
azure_account=devstoreaccount1
azure_key=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==

say() { echo "cluster: $*" >&2; }
fail() {
  echo "cluster: FAILED: $1${2:+ (log: $2)}" >&2
  [ -n "${2:-}" ] && [ -f "$2" ] && tail -n 20 "$2" >&2
  exit 1
}

# Every function below acts on the cluster whose state directory is $1.
kwokctl() { KWOK_WORKDIR="$1/kwok" "$bin/kwokctl" --name ark "${@:2}"; }

apiserver_up() {
  [ -f "$1/kubeconfig" ] && kubectl --kubeconfig "$1/kubeconfig" get --raw /readyz >/dev/null 2>&1
}


# Whether process $1 runs: it exists and is no zombie (an exited component whose parent, here
# perhaps a container's first process, has not reaped it yet).
runs() { [ -r "/proc/$1/stat" ] && ! awk '{ exit $3 != "Z" }' "/proc/$1/stat"; }

# A component that stopped is started again, as a kubelet restarts a static pod: without its
# kube-controller-manager (which exits when it loses its leader lease, say while etcd pauses) the
# cluster makes no ServiceAccounts and deletes no namespaces, and every later test would fail for
# a reason not its own. kwokctl starts each component whose pid file names no process; it takes a
# zombie for a running process, so the pid files of stopped components go first.
restart_stopped_components() {
  local dir="$1" file stopped=()
  for file in "$dir"/kwok/clusters/ark/pids/*.pid; do
    [ -f "$file" ] || continue
    runs "$(<"$file")" && continue
    stopped+=("$(basename "$file" .pid)")
    rm -f "$file"
  done
  [ ${#stopped[@]} -gt 0 ] || return 0
  local log="$dir/kwokctl-restart.log"
  say "${stopped[*]} of the cluster stopped; starting it again ($dir, log: $log)"
  kwokctl "$dir" start cluster >"$log" 2>&1 || fail "kwokctl start cluster" "$log"
  for _ in $(seq 1 120); do
    apiserver_up "$dir" && return
    sleep 0.5
  done
  fail "the API server did not answer within 60s of starting ${stopped[*]} again" "$log"
}

start_kubernetes() {
  local dir="$1"
  [ -d "$dir/kwok" ] && restart_stopped_components "$dir"
  if apiserver_up "$dir"; then
    say "kubernetes already running ($dir)"
    return
  fi
  # A half-started cluster from an earlier run is removed before starting anew.
  kwokctl "$dir" delete cluster >/dev/null 2>&1 || true
  mkdir -p "$dir"
  say "starting kube-apiserver, etcd, controller-manager, scheduler and kwok ($dir)"
  local log="$dir/kwokctl-create.log"
  # The API server reaches the real node's kubelet (exec, logs) as the cluster's admin; kwok acts
  # only for its own nodes (annotated by `kwokctl scale`), never for the real node's. (kwokctl
  # v0.8.0 indexes its patches by the flag's position: each component's flags alternate, or it
  # panics.) Mutating admission policies (beta in 1.35, off by default) let a test put Velero's
  # node agent's helper pods on the host's network, the only way here to the API server and S3.
  local pki="$dir/kwok/clusters/ark/pki"
  # kwokctl applies its Exec CRDs while the new API server may still drop connections: a create it
  # saw fail may have landed, and its retry then fails as an update without a resourceVersion
  # ("failed to init crds"). Seen on a loaded machine; the whole create is tried again, from scratch.
  local attempt
  for attempt in 1 2 3; do
    create_cluster "$dir" "$pki" "$log" && break
    [ "$attempt" = 3 ] && fail "kwokctl create cluster (3 attempts)" "$log"
    say "kwokctl create cluster failed (attempt $attempt, log: $log); starting again"
    kwokctl "$dir" delete cluster >/dev/null 2>&1 || true
  done
  add_test_stages "$dir"
}

create_cluster() {
  local dir="$1" pki="$2" log="$3"
  PATH="$bin:$PATH" kwokctl "$dir" create cluster \
    --runtime binary \
    --kube-apiserver-binary "$bin/kube-apiserver" \
    --kube-controller-manager-binary "$bin/kube-controller-manager" \
    --kube-scheduler-binary "$bin/kube-scheduler" \
    --etcd-binary "$bin/etcd" \
    --kwok-controller-binary "$bin/kwok" \
    --kube-authorization=true \
    --kube-feature-gates MutatingAdmissionPolicy=true \
    --kube-runtime-config admissionregistration.k8s.io/v1beta1=true \
    --enable-crds Exec,ClusterExec \
    --extra-args "kube-apiserver=kubelet-client-certificate=$pki/admin.crt" \
    --extra-args "kwok-controller=manage-all-nodes=false" \
    --extra-args "kube-apiserver=kubelet-client-key=$pki/admin.key" \
    --extra-args "kwok-controller=manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake" \
    --kubeconfig "$dir/kubeconfig" \
    --wait 3m >"$log" 2>&1
}

# kwok's pod stages make every container of a pod Running at once. Hook tests also need a pod that
# starts late and a container that never runs: scripts/kwok/stages.yaml adds a stage for those,
# chosen by annotations on the pod. kwokctl writes its default stages only into a configuration
# without any, so ours are appended to the one it wrote, and the cluster restarted to read them,
# before any node exists (kwok would wait out the old process's node leases). The leader leases the
# stopped scheduler and controller-manager held are removed, or their successors wait 15 s for them.
# kwokctl's stop sends SIGKILL and returns before the processes are gone: the restart waits for
# them, or a new component finds its port still held ("address already in use").
add_test_stages() {
  local config="$1/kwok/clusters/ark/kwok.yaml" log="$1/kwokctl-stages.log" pids
  grep -q "name: ark-test-pod-ready" "$config" || cat "$here/kwok/stages.yaml" >>"$config"
  pids=$(cat "$1"/kwok/clusters/ark/pids/*.pid 2>/dev/null | tr '\n' ' ')
  { kwokctl "$1" stop cluster && wait_gone "$pids" && kwokctl "$1" start cluster; } >"$log" 2>&1 ||
    fail "restarting kwok with ark's test stages" "$log"
  for _ in $(seq 1 120); do
    if apiserver_up "$1"; then
      kubectl --kubeconfig "$1/kubeconfig" -n kube-system delete lease --ignore-not-found \
        kube-scheduler kube-controller-manager >>"$log" 2>&1 || fail "removing stale leader leases" "$log"
      return
    fi
    sleep 0.5
  done
  fail "the API server did not come back after restarting with ark's test stages" "$log"
}

# wait_gone "PID...": until none of the processes is left, for at most 30 s.
wait_gone() {
  local pid left
  for _ in $(seq 1 300); do
    left=
    for pid in $1; do
      if kill -0 "$pid" 2>/dev/null; then left="$left $pid"; fi
    done
    [ -z "$left" ] && return 0
    sleep 0.1
  done
  echo "processes$left still there 30 s after they were stopped"
  return 1
}

# kwok's nodes take 110 pods each, as a kubelet does: four leave room for every test at once.
scale_nodes() {
  local log="$1/kwokctl-scale.log"
  kwokctl "$1" scale node --replicas "$kwok_nodes" >"$log" 2>&1 || fail "kwokctl scale node" "$log"
}

# Both clusters get Velero's CRDs exactly as Velero publishes them (config/crd/), so that every test
# runs ark on the CRDs of a cluster that runs Velero.
install_crds() {
  local kubeconfig="$1/kubeconfig" log="$1/crds.log" dir="$repo/config/crd/"
  {
    kubectl --kubeconfig "$kubeconfig" apply --server-side --force-conflicts -f "$dir"
    kubectl --kubeconfig "$kubeconfig" wait --for condition=Established --timeout 60s -f "$dir"
    kubectl --kubeconfig "$kubeconfig" create namespace velero --dry-run=client -o yaml |
      kubectl --kubeconfig "$kubeconfig" apply -f -
  } >"$log" 2>&1 || fail "installing Velero's CRDs (config/crd/)" "$log"
}

stop_kubernetes() {
  if [ -d "$1/kwok" ]; then
    kwokctl "$1" delete cluster >/dev/null 2>&1 || true
  fi
}

# The storage servers (SeaweedFS as S3, Azurite as Azure Blob): each in a
# process group of its own ($state/<name>.pid, log $state/<name>.log), answering on 127.0.0.1.
# start_server NAME PORT READY COMMAND...: READY is a command that succeeds once it serves.
start_server() {
  local name="$1" port="$2" ready="$3"
  shift 3
  if [ -f "$state/$name.pid" ] && kill -0 "$(cat "$state/$name.pid")" 2>/dev/null && $ready; then
    say "$name already running on 127.0.0.1:$port"
    return
  fi
  # Another process on the port (say, the server of another checkout's cluster) would answer in
  # place of ours, with other data: refuse rather than run the tests against it.
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    fail "127.0.0.1:$port ($name) is taken by another process (another checkout's cluster? stop it with its scripts/cluster.sh down)"
  fi
  say "starting $name on 127.0.0.1:$port"
  local log="$state/$name.log"
  setsid "$@" >"$log" 2>&1 </dev/null &
  echo $! >"$state/$name.pid"
  for _ in $(seq 1 120); do
    $ready && return
    kill -0 "$(cat "$state/$name.pid")" 2>/dev/null || fail "$name exited" "$log"
    sleep 0.5
  done
  fail "$name did not answer on 127.0.0.1:$port within 60s" "$log"
}

stop_server() {
  [ -f "$state/$1.pid" ] || return 0
  local pid
  pid=$(cat "$state/$1.pid")
  kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -9 -- "-$pid" 2>/dev/null || true
}

# The bucket exists once an authenticated request would not say NoSuchBucket; an anonymous request
# is answered (AccessDenied) as soon as the gateway listens.
s3_ready() { curl -s "http://127.0.0.1:$s3_port/$s3_bucket" | grep -q "AccessDenied"; }
azure_ready() { curl -s -o /dev/null "http://127.0.0.1:$azure_port/"; }

start_storage() {
  mkdir -p "$state/weed" "$state/azurite"
  start_server seaweedfs "$s3_port" s3_ready \
    env AWS_ACCESS_KEY_ID="$s3_access_key" AWS_SECRET_ACCESS_KEY="$s3_secret_key" \
    "$weed" mini -dir="$state/weed" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    -s3.port="$s3_port" -admin.ui=false -webdav=false -bucket="$s3_bucket"
  start_server azurite "$azure_port" azure_ready \
    "$ARK_CLUSTER_CACHE/azurite-$AZURITE_VERSION/node_modules/.bin/azurite-blob" \
    --blobHost 127.0.0.1 --blobPort "$azure_port" --location "$state/azurite" \
    --skipApiVersionCheck --disableTelemetry
  "$ARK_CLUSTER_CACHE/venv/bin/python" - "http://127.0.0.1:$azure_port/$azure_account" \
    "$azure_account" "$azure_key" "$s3_bucket" >>"$state/azurite.log" 2>&1 <<'PY' ||
import sys
from azure.core.exceptions import ResourceExistsError
from azure.storage.blob import BlobServiceClient
url, account, key, container = sys.argv[1:]
client = BlobServiceClient(url, credential={"account_name": account, "account_key": key})
try:
    client.create_container(container)
except ResourceExistsError:
    pass
PY
    fail "creating the Azurite container $s3_bucket" "$state/azurite.log"
}

# write_env DIR [MORE]: DIR/cluster.env, replaced at once (tests may read it meanwhile), MORE appended.
write_env() {
  cat >"$1/cluster.env.tmp" <<ENV
KUBECONFIG=$1/kubeconfig
ARK_S3_ENDPOINT=http://127.0.0.1:$s3_port
ARK_S3_BUCKET=$s3_bucket
ARK_S3_ACCESS_KEY=$s3_access_key
ARK_S3_SECRET_KEY=$s3_secret_key
ARK_AZURE_ENDPOINT=http://127.0.0.1:$azure_port/$azure_account
ARK_AZURE_ACCOUNT=$azure_account
ARK_AZURE_KEY=$azure_key
ARK_KWOK_NODES=$kwok_nodes
ENV
  printf '%s' "${2:-}" >>"$1/cluster.env.tmp"
  mv "$1/cluster.env.tmp" "$1/cluster.env"
}

case "${1:-}" in
  up)
    start=$(date +%s)
    # The demo's part is all of it once the second cluster runs: cluster.env then names it all.
    demo=0
    [ "${2:-}" = demo ] && ! apiserver_up "$state/second" && demo=1
    bash "$here/cluster-build.sh"
    dirs=("$state")
    [ $demo = 1 ] || dirs+=("$state/second")
    for dir in "${dirs[@]}"; do
      start_kubernetes "$dir"
      scale_nodes "$dir"
      install_crds "$dir"
    done
    bash "$here/node.sh" up "$state"
    node=$(printf 'ARK_REAL_NODE=127.0.0.1\nARK_REAL_NODE_CONTAINERD=%s\nARK_REAL_NODE_PODS=%s\n' \
      "$state/node/containerd.sock" "$state/node/kubelet/pods")
    if [ $demo = 1 ]; then
      write_env "$state" "$node"$'\n'
      say "the demo's part is ready in $(($(date +%s) - start))s: export \$(cat $state/cluster.env)"
      exit 0
    fi
    bash "$here/csi.sh" up "$state"
    start_storage
    csi_bin=$(bash "$here/csi-build.sh" --print-dir)
    csi=$(printf 'ARK_CSI_DRIVER=hostpath.csi.ark.test\nARK_CSI_STORAGE_CLASS=ark-csi\nARK_CSI_SNAPSHOT_CLASS=ark-csi\nARK_CSI_SANITY=%s\nARK_CSI_DRIVER_BIN=%s\n' \
      "$csi_bin/csi-sanity" "$csi_bin/ark-csi-driver")
    write_env "$state" "$node"$'\n'"$csi"$'\n'
    write_env "$state/second"
    say "ready in $(($(date +%s) - start))s: export \$(cat $state/cluster.env)"
    ;;
  down)
    bash "$here/csi.sh" down "$state"
    bash "$here/node.sh" down "$state"
    stop_kubernetes "$state/second"
    stop_kubernetes "$state"
    for server in seaweedfs azurite; do stop_server "$server"; done
    # Nothing `up` started may outlive `down` (the real node checked its own mounts and cgroups).
    for _ in $(seq 1 20); do pgrep -f -- "$state/" >/dev/null || break; sleep 0.25; done
    if pgrep -f -- "$state/" >/dev/null; then
      fail "still running after down: $(pgrep -af -- "$state/" | cut -c1-120 | tr '\n' ';')"
    fi
    rm -rf "$state"
    say "stopped and removed $state; nothing of it runs or is mounted"
    ;;
  status)
    up=0
    for dir in "$state" "$state/second"; do
      if apiserver_up "$dir"; then say "kubernetes: running ($dir/kubeconfig)"; else say "kubernetes: not running ($dir)"; up=1; fi
    done
    for server in "seaweedfs s3_ready $s3_port" "azurite azure_ready $azure_port"; do
      set -- $server
      if $2; then say "$1: running on 127.0.0.1:$3"; else say "$1: not running"; up=1; fi
    done
    exit $up
    ;;
  *)
    echo "usage: $0 up [demo]|down|status" >&2
    exit 2
    ;;
esac
