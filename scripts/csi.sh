#!/usr/bin/env bash
# A real CSI stack beside the first local cluster, on its real node (scripts/node.sh): the test
# driver of tests/csi-driver/ (`hostpath.csi.ark.test`: volumes are directories under
# $STATE/csi/data, snapshots copies of them), csi-provisioner, csi-snapshotter and
# snapshot-controller, all host processes with the cluster's admin kubeconfig and no leader
# election, built by scripts/csi-build.sh. The driver registers itself with the kubelet through
# its plugins_registry, as node-driver-registrar would (the Go module proxy does not serve that).
# The objects tests use: the snapshot CRDs, the CSIDriver, the StorageClass `ark-csi` and the
# VolumeSnapshotClass `ark-csi`, the driver's default (tests that add classes of the driver, a
# fault's, name theirs on their claims; the others still get `ark-csi`). Pods that
# mount these volumes must run on the real node (`Cluster::on_real_node` in the test harness).
#
#   scripts/csi.sh up STATE     install the objects, start the processes, wait for the kubelet to
#                               list the driver on its CSINode; a no-op when all of it runs
#   scripts/csi.sh down STATE   stop the processes, unmount what is mounted under $STATE/csi, and
#                               check that nothing of theirs is left
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"

state="$2"
dir="$state/csi"
driver=hostpath.csi.ark.test
class=ark-csi
node=127.0.0.1
kubelet="$state/node/kubelet"
socket="$kubelet/plugins/$driver/csi.sock"
registration="$kubelet/plugins_registry"
# In the order they start; `down` stops them the other way round.
components=(driver csi-provisioner csi-snapshotter snapshot-controller)

say() { echo "csi: $*" >&2; }
fail() {
  echo "csi: FAILED: $1${2:+ (log: $2)}" >&2
  [ -n "${2:-}" ] && [ -f "$2" ] && tail -n 20 "$2" >&2
  exit 1
}
kubectl() { command kubectl --kubeconfig "$state/kubeconfig" "$@"; }
running() { [ -f "$dir/$1.pid" ] && kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null; }
registered() {
  kubectl get csinode "$node" -o jsonpath='{.spec.drivers[*].name}' 2>/dev/null | tr ' ' '\n' | grep -qxF "$driver"
}

# start NAME COMMAND...: a process group of its own, its pid in $dir/NAME.pid, its log $dir/NAME.log.
start() {
  local name="$1"
  shift
  setsid "$@" >"$dir/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/$name.pid"
}

stop() {
  running "$1" || return 0
  local pid
  pid=$(cat "$dir/$1.pid")
  kill -- "-$pid" 2>/dev/null || true
  for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
  kill -9 -- "-$pid" 2>/dev/null || true
}

install_objects() {
  local crds="$1" log="$dir/objects.log"
  {
    kubectl apply --server-side --force-conflicts -f "$crds/" &&
      kubectl wait --for condition=Established --timeout 60s -f "$crds/" &&
      kubectl apply -f - <<YAML
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: { name: $driver }
spec:
  attachRequired: false
  podInfoOnMount: false
  volumeLifecycleModes: [Persistent]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: { name: $class }
provisioner: $driver
reclaimPolicy: Delete
volumeBindingMode: Immediate
allowVolumeExpansion: false
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata:
  name: $class
  annotations: { snapshot.storage.kubernetes.io/is-default-class: "true" }
driver: $driver
deletionPolicy: Delete
YAML
  } >"$log" 2>&1 || fail "installing the snapshot CRDs, the CSIDriver and the classes" "$log"
}

up() {
  local component all=1
  for component in "${components[@]}"; do running "$component" || all=0; done
  if [ $all = 1 ] && registered; then
    say "already running ($dir)"
    return
  fi
  down_quietly
  local bin
  bin=$(bash "$here/csi-build.sh")
  mkdir -p "$dir/data"
  install_objects "$(dirname "$bin")/crd"
  say "starting the driver $driver, csi-provisioner, csi-snapshotter and snapshot-controller ($dir)"
  start driver "$bin/ark-csi-driver" --endpoint "$socket" --state "$dir/data" --node-id "$node" \
    --registration-dir "$registration"
  for _ in $(seq 1 40); do
    [ -S "$socket" ] && break
    running driver || fail "the driver exited" "$dir/driver.log"
    sleep 0.25
  done
  [ -S "$socket" ] || fail "the driver did not listen on $socket within 10s" "$dir/driver.log"
  local common=(--kubeconfig "$state/kubeconfig" --leader-election=false --v=2)
  # A volume restored from a snapshot is a copy, which may outlast the provisioner's default 10s.
  # The provisioner takes its as-source finalizer off a snapshot once the volume is made, but only
  # tries once: on a conflict (the snapshot controller writing the snapshot's status meanwhile) it
  # leaves it to its sweep of orphaned finalizers, every 5 minutes by default, and a namespace
  # holding that snapshot stays Terminating until then (a full run saw ark's uninstall wait 4
  # minutes for it). Swept every 15s here.
  start csi-provisioner "$bin/csi-provisioner" "${common[@]}" --csi-address "$socket" --extra-create-metadata \
    --timeout 60s --snapshot-orphan-sweep-interval 15s
  # Both snapshot controllers retry within 10s rather than backing off for up to 5 minutes, and
  # the snapshot-controller looks at every snapshot again each 20s instead of each 15 minutes:
  # it drops a snapshot's as-source finalizer only on a pass that finds no claim provisioning from
  # it in its cache, and does not requeue when the cache lags ("TODO: should requeue this?" in
  # external-snapshotter's pkg/common-controller/snapshot_controller.go). Tests that delete a
  # restored claim and then its snapshot would otherwise wait for the next resync.
  start csi-snapshotter "$bin/csi-snapshotter" "${common[@]}" --csi-address "$socket" --extra-create-metadata \
    --retry-interval-max 10s
  start snapshot-controller "$bin/snapshot-controller" "${common[@]}" --retry-interval-max 10s --resync-period 20s
  for _ in $(seq 1 120); do
    for component in "${components[@]}"; do
      running "$component" || fail "$component exited" "$dir/$component.log"
    done
    registered && { say "the kubelet lists $driver on node $node"; return; }
    sleep 0.5
  done
  fail "the kubelet did not list $driver on CSINode $node within 60s (its log: $state/node/kubelet.log)" \
    "$dir/driver.log"
}

# Mount points under $dir, deepest first. (Pods' mounts of the volumes are the kubelet's, under
# its own directory: scripts/node.sh unmounts those.)
mounts() { awk -v dir="$dir/" 'index($5, dir) == 1 { print $5 }' /proc/self/mountinfo | sort -r; }

# Loop devices attached to block volumes' files under $dir. The driver detaches each when the
# kubelet unpublishes its volume; one still mounted by the kubelet is detached once scripts/node.sh
# unmounts it (`losetup --detach` of a busy device waits for its last user).
loops() { losetup --list --noheadings --output NAME,BACK-FILE 2>/dev/null | awk -v dir="$dir/" 'index($2, dir) == 1 { print $1 }'; }

down_quietly() {
  [ -d "$dir" ] || return 0
  local i mount loop
  for ((i = ${#components[@]} - 1; i >= 0; i--)); do stop "${components[$i]}"; done
  # The driver removes its sockets when it stops; one killed leaves them, and the kubelet would
  # keep trying the registration socket.
  rm -f "$socket" "$registration/$driver-reg.sock"
  for mount in $(mounts); do
    umount -l "$mount" 2>/dev/null || true
  done
  for loop in $(loops); do losetup --detach "$loop" 2>/dev/null || true; done
}

# What `down` must leave: none of the processes, nothing mounted under $dir.
check_gone() {
  local left=() component
  for component in "${components[@]}"; do
    running "$component" && left+=("$component (pid $(cat "$dir/$component.pid"))")
  done
  [ -z "$(mounts)" ] || left+=("mounts under $dir")
  [ ${#left[@]} -eq 0 ] || fail "left behind: ${left[*]}"
}

case "${1:-}" in
  up) up ;;
  down)
    down_quietly
    check_gone
    ;;
  *)
    echo "usage: $0 up|down STATE" >&2
    exit 2
    ;;
esac
