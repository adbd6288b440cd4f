#!/usr/bin/env bash
# Builds the kopia CLI from the Go module proxy, once, into a cache outside the repository: the
# oracle of ark's kopia format (crates/ark-kopia/tests) and of its benchmarks. v0.16.0 is the kopia
# Velero v1.18 links. ark does not depend on kopia; its tests check that each reads the other.
#   scripts/kopia-build.sh               build if needed, print the bin directory
#   scripts/kopia-build.sh --print-dir   print the bin directory only
set -euo pipefail

KOPIA_VERSION="${KOPIA_VERSION:-v0.16.0}"
out="${ARK_KOPIA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ark-kopia}/$KOPIA_VERSION"
if [ "${1:-}" = --print-dir ]; then
  echo "$out/bin"
  exit 0
fi
mkdir -p "$out/bin" "$out/src"
log="$out/build.log"
if [ ! -x "$out/bin/kopia" ]; then
  echo "kopia-build: building kopia $KOPIA_VERSION (log: $log)" >&2
  cd "$out/src"
  rm -f go.mod go.sum
  {
    # `go install kopia@version` asks the proxy for kopia's version list, which it refuses here;
    # a wrapper module that requires the exact version does not.
    go mod init ark.local/kopia-wrapper
    go mod edit -require="github.com/kopia/kopia@$KOPIA_VERSION"
    GOFLAGS=-mod=mod go build -trimpath -o "$out/bin/kopia" github.com/kopia/kopia
  } >>"$log" 2>&1 || { echo "kopia-build: FAILED (log: $log)" >&2; tail -20 "$log" >&2; exit 1; }
fi
echo "$out/bin"
