#!/usr/bin/env bash
# One real node in the first local cluster, beside kwok's: pods on it really run (init containers,
# exec, logs, probes, volumes). A kubelet built from the control plane's own module and version
# (scripts/cluster-build.sh) over Debian's containerd 1.6 and runc. Debian's, not containerd 2.x
# built from the Go module proxy: it installs in seconds instead of a three-minute build, and
# kubelet 1.35 runs it (with a warning that 1.36 drops containerd 1.x; the kubelet is pinned here).
#
# Everything listens on 127.0.0.1 or lives in network namespaces made here: the node is named
# 127.0.0.1 (the kubelet refuses a loopback --node-ip, but a hostname that parses as an IP becomes
# its InternalIP), its ports are 20250 (API) and 20248 (healthz). A pod that is not hostNetwork gets
# a network namespace of its own, on the bridge `ark0` with an address of 10.88.0.0/24 (the CRI
# needs one): no gateway, no masquerade, forwarding left off, so those addresses exist only inside
# the namespaces made here and nothing leaves a pod. The tests reach pods through exec, never
# their addresses. The node is tainted `ark.test/real-node=true:NoSchedule` and labelled `ark.test/real-node=true`, so
# only pods that ask for it land there.
#
# Settings without which this VM refuses: cgroup v1 allowed,
# the cgroupfs driver, swap allowed, and containerd's restrict_oom_score_adj (the VM lacks
# CAP_SYS_RESOURCE).
#
#   scripts/node.sh up STATE     start containerd and the kubelet; wait for the node to be Ready
#   scripts/node.sh import STATE TARBALL...   import images (docker-archive tarballs) into the node
#   scripts/node.sh down STATE   stop the pods, the kubelet, the shims and containerd; unmount what
#                                they mounted; remove their cgroups and network namespaces; then
#                                check that nothing of theirs is left
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
source "$here/cluster-versions.sh"

state="$2"
dir="$state/node"
pki="$state/kwok/clusters/ark/pki"
sock="$dir/containerd.sock"
images="$ARK_CLUSTER_CACHE/images"
node=127.0.0.1
cgroup=ark-node
bridge=ark0

say() { echo "node: $*" >&2; }
fail() {
  echo "node: FAILED: $1${2:+ (log: $2)}" >&2
  [ -n "${2:-}" ] && [ -f "$2" ] && tail -n 20 "$2" >&2
  exit 1
}
kubectl() { command kubectl --kubeconfig "$state/kubeconfig" "$@"; }
ctr() { command ctr --address "$sock" --namespace k8s.io "$@"; }
running() { [ -f "$dir/$1.pid" ] && kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null; }
ready() {
  [ "$(kubectl get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
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

# Each v1 hierarchy (and the v2 `unified` one) gets the node's cgroup root: the kubelet puts every
# pod under it, and `down` removes it.
cgroup_dirs() {
  local mount
  for mount in /sys/fs/cgroup/*/; do
    [ -f "$mount/cgroup.procs" ] && echo "${mount%/}/$cgroup"
  done
}

write_config() {
  mkdir -p "$dir/cni" "$dir/kubelet" "$dir/logs"
  cat >"$dir/containerd.toml" <<TOML
version = 2
root = "$dir/containerd/root"
state = "$dir/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[debug]
  address = "$dir/containerd-debug.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "ark.local/pause:1"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni"
TOML
  cat >"$dir/cni/10-ark.conflist" <<JSON
{ "cniVersion": "0.4.0", "name": "ark-node", "plugins": [
  { "type": "bridge", "bridge": "$bridge", "isGateway": false, "ipMasq": false, "hairpinMode": false,
    "ipam": { "type": "host-local", "ranges": [[{ "subnet": "10.88.0.0/24" }]], "dataDir": "$dir/cni-ipam" } },
  { "type": "loopback" }
] }
JSON
  # The node's client certificate, signed by the cluster's CA: the Node authorizer knows it by
  # its name and group.
  if [ ! -f "$dir/kubelet.crt" ]; then
    openssl req -new -newkey rsa:2048 -nodes -keyout "$dir/kubelet.key" \
      -subj "/O=system:nodes/CN=system:node:$node" -out "$dir/kubelet.csr" 2>/dev/null
    openssl x509 -req -in "$dir/kubelet.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
      -set_serial "0x$(openssl rand -hex 8)" -days 365 -out "$dir/kubelet.crt" \
      -extfile <(echo "extendedKeyUsage=clientAuth") 2>/dev/null
  fi
  local server
  server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  cat >"$dir/kubelet.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters: [{ name: local, cluster: { server: "$server", certificate-authority: "$pki/ca.crt" } }]
users: [{ name: node, user: { client-certificate: "$dir/kubelet.crt", client-key: "$dir/kubelet.key" } }]
contexts: [{ name: node, context: { cluster: local, user: node } }]
current-context: node
YAML
  cat >"$dir/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 20250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 20248
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: true }
  x509: { clientCAFile: "$pki/ca.crt" }
authorization: { mode: Webhook }
containerRuntimeEndpoint: "unix://$sock"
cgroupDriver: cgroupfs
cgroupRoot: /$cgroup
failCgroupV1: false
failSwapOn: false
podLogsDir: "$dir/logs"
maxPods: 30
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: { memory.available: "1Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%" }
registerWithTaints: [{ key: ark.test/real-node, value: "true", effect: NoSchedule }]
YAML
}

# Images reach the node only this way: there is no registry.
import() {
  local image
  for image in "$@"; do
    ctr images import "$image" >>"$dir/images.log" 2>&1 ||
      fail "importing $(basename "$image")" "$dir/images.log"
  done
}

# /run/netns a shared mount point of its own before any pod's network namespace is mounted there.
# Otherwise the first `ip netns add` on the host (a test's isolated network, tests/src/netns.rs)
# bind-mounts the directory over itself: the namespaces of the pods running then stay mounted
# beneath, hidden, containerd can never remove them ("unlinkat ...: device or resource busy") and
# those pods stay Terminating for ever.
shared_netns_dir() {
  mkdir -p /run/netns
  mountpoint -q /run/netns || mount --bind /run/netns /run/netns
  mount --make-shared /run/netns
}

up() {
  if running kubelet && running containerd && ready; then
    say "already running ($dir)"
    return
  fi
  down_quietly
  mkdir -p "$dir"
  say "starting containerd and the kubelet: node $node ($dir)"
  write_config
  for cg in $(cgroup_dirs); do mkdir -p "$cg"; done
  shared_netns_dir
  start containerd containerd --config "$dir/containerd.toml"
  for _ in $(seq 1 60); do
    ctr version >/dev/null 2>&1 && break
    running containerd || fail "containerd exited" "$dir/containerd.log"
    sleep 0.25
  done
  ctr version >/dev/null 2>&1 || fail "containerd did not answer within 15s" "$dir/containerd.log"
  import "$images"/*.tar
  start kubelet "$ARK_CLUSTER_CACHE/bin/kubelet" --config "$dir/kubelet.yaml" \
    --kubeconfig "$dir/kubelet.kubeconfig" --root-dir "$dir/kubelet" \
    --hostname-override "$node" --node-labels ark.test/real-node=true
  for _ in $(seq 1 120); do
    ready && { say "node $node is Ready"; return; }
    running kubelet || fail "the kubelet exited" "$dir/kubelet.log"
    sleep 0.5
  done
  fail "node $node was not Ready within 60s" "$dir/kubelet.log"
}

# Every process in the node's cgroups (the pods' containers), then the kubelet, the shims and
# containerd; what they mounted under $dir and the pods' network namespaces; the cgroups.
down_quietly() {
  [ -d "$dir" ] || return 0
  stop kubelet
  local cg pid
  for cg in $(cgroup_dirs); do
    [ -d "$cg" ] || continue
    find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r pid; do
      kill -9 "$pid" 2>/dev/null || true
    done
  done
  for pid in $(pgrep -f "containerd-shim.*-address $sock" || true); do kill -9 "$pid" 2>/dev/null || true; done
  stop containerd
  local mounts
  mounts=$(awk -v dir="$dir" '$5 ~ "^"dir || $5 ~ "^/run/netns/cni-" || $5 ~ "^/var/run/netns/cni-" { print $5 }' /proc/self/mountinfo | sort -r)
  for mount in $mounts; do umount -l "$mount" 2>/dev/null || true; done
  local loop
  for loop in $(loops); do losetup --detach "$loop" 2>/dev/null || true; done
  rm -f /run/netns/cni-* 2>/dev/null || true
  ip link delete "$bridge" 2>/dev/null || true
  for cg in $(cgroup_dirs); do
    [ -d "$cg" ] && find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
}

# The loop devices the kubelet attached to block volumes it gave pods (their devices, under $dir).
loops() { losetup --list --noheadings --output NAME,BACK-FILE 2>/dev/null | awk -v dir="$dir/" 'index($2, dir) == 1 { print $1 }'; }

# What `down` must leave: no process, mount, loop device or cgroup of the node's.
check_gone() {
  local left=()
  pgrep -f -- "$dir" >/dev/null && left+=("processes: $(pgrep -af -- "$dir" | head -3 | tr '\n' ';')")
  grep -q " $dir" /proc/self/mountinfo && left+=("mounts under $dir")
  [ -z "$(loops)" ] || left+=("loop devices of $dir: $(loops | tr '\n' ' ')")
  for cg in $(cgroup_dirs); do [ -d "$cg" ] && left+=("cgroup $cg"); done
  ip link show "$bridge" >/dev/null 2>&1 && left+=("the bridge $bridge")
  [ ${#left[@]} -eq 0 ] || fail "left behind: ${left[*]}"
}

case "${1:-}" in
  up) up ;;
  import) import "${@:3}" ;;
  down)
    down_quietly
    check_gone
    ;;
  *)
    echo "usage: $0 up|down STATE, or import STATE TARBALL..." >&2
    exit 2
    ;;
esac
