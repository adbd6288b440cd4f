#!/usr/bin/env bash
# Everything ark and its tests need on a fresh machine: the test cluster's binaries (built from the
# Go module proxy and PyPI into ~/.cache/ark-cluster, once), Velero for the interop tests (into
# ~/.cache/ark-velero, once), the kopia CLI for the repository-format tests (into ~/.cache/ark-kopia,
# once), the CSI test ground (into ~/.cache/ark-csi, once) and ark itself (where CARGO_TARGET_DIR
# says: scripts/test.sh keeps it in ~/.cache/ark-target).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for tool in cargo go python3 kubectl curl setsid flock timeout git; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: missing on PATH: ${missing[*]} (see README.md, Prerequisites)" >&2
  exit 1
fi
rustup component add clippy rustfmt >/dev/null 2>&1 || true

bash scripts/cluster-build.sh
bash scripts/velero-build.sh >/dev/null
bash scripts/kopia-build.sh >/dev/null
bash scripts/csi-build.sh >/dev/null
cargo build --workspace --all-targets
