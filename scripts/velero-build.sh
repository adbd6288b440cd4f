#!/usr/bin/env bash
# Builds Velero's CLI and server (with its AWS plugin and restore helper) from the Go module proxy,
# once, into a cache outside the repository, for the interop tests (crates/ark/tests/e2e/velero/)
# and the side-by-side benchmarks. ark does not depend on Velero; its tests check that it runs beside it.
#   scripts/velero-build.sh               build if needed, print the bin directory
#   scripts/velero-build.sh --print-dir   print the bin directory only
#   scripts/velero-build.sh --print-source [VERSION]
#                                         fetch Velero's source (VERSION, else the one built)
#                                         through the Go module proxy and print its directory
set -euo pipefail

VELERO_VERSION="${VELERO_VERSION:-v1.18.3}"
AWS_PLUGIN_VERSION="${AWS_PLUGIN_VERSION:-v1.14.3}"
out="${ARK_VELERO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ark-velero}/$VELERO_VERSION"
if [ "${1:-}" = --print-source ]; then
  version=${2:-$VELERO_VERSION}
  # Outside any module: the download alone, into Go's module cache (read-only files).
  dir=$(cd / && go mod download -json "github.com/vmware-tanzu/velero@$version" |
    sed -n 's/^\t*"Dir": "\(.*\)",*$/\1/p')
  [ -n "$dir" ] && [ -d "$dir" ] ||
    { echo "velero-build: could not fetch Velero $version's source through the Go module proxy" >&2; exit 1; }
  echo "$dir"
  exit 0
fi
if [ "${1:-}" = --print-dir ]; then
  echo "$out/bin"
  exit 0
fi
mkdir -p "$out/bin" "$out/src"
log="$out/build.log"

if [ ! -x "$out/bin/velero" ]; then
  echo "velero-build: building velero $VELERO_VERSION (log: $log)" >&2
  cd "$out/src"
  rm -f go.mod go.sum
  {
    go mod init ark.local/velero-wrapper
    gomod=$(go mod download -json "github.com/vmware-tanzu/velero@$VELERO_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    # Velero's go.mod replaces kopia with its fork: the wrapper needs the same replace.
    grep -E '^replace .*kopia' "$gomod" | sed 's/^replace //' | while read -r line; do
      go mod edit -replace="$(echo "$line" | sed 's/ => /=/; s/ \(v[^ ]*\)$/@\1/; s/ //g')"
    done
    go mod edit -require="github.com/vmware-tanzu/velero@$VELERO_VERSION"
    # The module proxy here refuses k8s.io/cli-runtime v0.33.12, which v1.18.3 asks for; v0.33.10
    # has the same API for what the velero CLI uses.
    go mod edit -replace="k8s.io/cli-runtime=k8s.io/cli-runtime@v0.33.10"
    GOFLAGS=-mod=mod go build -trimpath -o "$out/bin/velero" github.com/vmware-tanzu/velero/cmd/velero
  } >>"$log" 2>&1 || { echo "velero-build: FAILED (log: $log)" >&2; tail -20 "$log" >&2; exit 1; }
fi
# The init container Velero puts first in pods whose volumes it restores (its image's
# /velero-restore-helper), for the node agent's interop tests.
if [ ! -x "$out/bin/velero-restore-helper" ]; then
  echo "velero-build: building velero-restore-helper $VELERO_VERSION" >&2
  (cd "$out/src" && GOFLAGS=-mod=mod go build -trimpath -o "$out/bin/velero-restore-helper" \
    github.com/vmware-tanzu/velero/cmd/velero-restore-helper) >>"$log" 2>&1 ||
    { echo "velero-build: FAILED (log: $log)" >&2; tail -20 "$log" >&2; exit 1; }
fi
if [ ! -x "$out/bin/velero-plugin-for-aws" ]; then
  echo "velero-build: building velero-plugin-for-aws $AWS_PLUGIN_VERSION" >&2
  GOBIN="$out/bin" go install -trimpath \
    "github.com/vmware-tanzu/velero-plugin-for-aws/velero-plugin-for-aws@$AWS_PLUGIN_VERSION" >>"$log" 2>&1 ||
    { echo "velero-build: FAILED (log: $log)" >&2; tail -20 "$log" >&2; exit 1; }
fi
echo "$out/bin"
