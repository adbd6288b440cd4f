#!/usr/bin/env bash
# Builds the CSI test ground (docs/test-ground.md, "CSI") from the Go module proxy, once, into a cache
# outside the repository: snapshot-controller and csi-snapshotter (external-snapshotter), csi-provisioner
# (external-provisioner), csi-sanity (csi-test), and the snapshot CRDs beside them; then the test
# driver of tests/csi-driver/ whenever its source changed. scripts/csi.sh runs them beside the
# first local cluster.
#   scripts/csi-build.sh               build if needed, print the bin directory
#   scripts/csi-build.sh --print-dir   print the bin directory only
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
# v8.4.0 and v6.4.0 (both the newest served of their lines when pinned; see docs/test-ground.md).
SNAPSHOTTER_VERSION="${SNAPSHOTTER_VERSION:-v8.4.0}"
PROVISIONER_VERSION="${PROVISIONER_VERSION:-v6.4.0}"
CSI_TEST_VERSION="${CSI_TEST_VERSION:-v5.6.0}"
out="${ARK_CSI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ark-csi}/snapshotter-$SNAPSHOTTER_VERSION-provisioner-$PROVISIONER_VERSION-csi-test-$CSI_TEST_VERSION"
if [ "${1:-}" = --print-dir ]; then
  echo "$out/bin"
  exit 0
fi
mkdir -p "$out/bin" "$out/src" "$out/crd"
log="$out/build.log"
failed() {
  echo "csi-build: FAILED: $1 (log: $log)" >&2
  tail -20 "$log" >&2
  exit 1
}
# Each tool builds inside a writable copy of its own module, so with exactly the dependencies and
# replace directives its release pinned (`go install x@version` refuses modules with replace
# directives, and the proxy here refuses version lists).
export GOFLAGS="-mod=mod -buildvcs=false"

# unpack MODULE VERSION DIR: a writable copy of the module's source in DIR.
unpack() {
  local json source
  json=$(go mod download -json "$1@$2") || { echo "$json"; return 1; }
  source=$(echo "$json" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  rm -rf "$3" && cp -r "$source" "$3" && chmod -R u+w "$3"
}

snapshotter="$out/src/external-snapshotter"
if [ ! -x "$out/bin/snapshot-controller" ] || [ ! -x "$out/bin/csi-snapshotter" ] ||
  [ ! -f "$out/crd/snapshot.storage.k8s.io_volumesnapshots.yaml" ]; then
  echo "csi-build: building snapshot-controller and csi-snapshotter $SNAPSHOTTER_VERSION (log: $log)" >&2
  # (Each step chained: `set -e` does not stop a block whose status `||` tests.)
  {
    unpack github.com/kubernetes-csi/external-snapshotter/v8 "$SNAPSHOTTER_VERSION" "$snapshotter" &&
      # Its go.mod replaces the client module with ./client, a module of its own that the main
      # module's zip leaves out: the client module of the same version takes its place.
      unpack github.com/kubernetes-csi/external-snapshotter/client/v8 "$SNAPSHOTTER_VERSION" "$snapshotter/client" &&
      cd "$snapshotter" &&
      go build -trimpath -o "$out/bin/snapshot-controller" ./cmd/snapshot-controller &&
      go build -trimpath -o "$out/bin/csi-snapshotter" ./cmd/csi-snapshotter &&
      cp client/config/crd/snapshot.storage.k8s.io_*.yaml "$out/crd/"
  } >>"$log" 2>&1 || failed "building external-snapshotter $SNAPSHOTTER_VERSION"
fi

if [ ! -x "$out/bin/csi-provisioner" ]; then
  echo "csi-build: building csi-provisioner $PROVISIONER_VERSION (log: $log)" >&2
  {
    unpack github.com/kubernetes-csi/external-provisioner/v6 "$PROVISIONER_VERSION" "$out/src/external-provisioner" &&
      cd "$out/src/external-provisioner" &&
      go build -trimpath -o "$out/bin/csi-provisioner" ./cmd/csi-provisioner
  } >>"$log" 2>&1 || failed "building csi-provisioner $PROVISIONER_VERSION"
fi

if [ ! -x "$out/bin/csi-sanity" ]; then
  echo "csi-build: building csi-sanity $CSI_TEST_VERSION (log: $log)" >&2
  {
    unpack github.com/kubernetes-csi/csi-test/v5 "$CSI_TEST_VERSION" "$out/src/csi-test" &&
      cd "$out/src/csi-test" &&
      go build -trimpath -o "$out/bin/csi-sanity" ./cmd/csi-sanity
  } >>"$log" 2>&1 || failed "building csi-sanity $CSI_TEST_VERSION"
fi

# The test driver is rebuilt when its source changes (its hash is kept beside it), into a new file
# renamed over the old, so that a driver running from it keeps running.
driver_src="$repo/tests/csi-driver"
sum=$(cd "$driver_src" && cat go.mod go.sum ./*.go | sha256sum | cut -d' ' -f1)
if [ ! -x "$out/bin/ark-csi-driver" ] || [ "$(cat "$out/bin/ark-csi-driver.sha256" 2>/dev/null)" != "$sum" ]; then
  echo "csi-build: building the test driver (tests/csi-driver, log: $log)" >&2
  (cd "$driver_src" && GOFLAGS=-buildvcs=false go build -trimpath -o "$out/bin/ark-csi-driver.new" .) >>"$log" 2>&1 ||
    failed "building the test driver"
  mv -f "$out/bin/ark-csi-driver.new" "$out/bin/ark-csi-driver"
  echo "$sum" >"$out/bin/ark-csi-driver.sha256"
fi
echo "$out/bin"
