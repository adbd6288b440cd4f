#!/usr/bin/env bash
# Every check and every test, the cluster tests included: starts the local cluster (building its
# binaries the first time), then formatting, lints, generated-file drift, `cargo test` and a bounded
# fuzz run of every fuzz target (scripts/fuzz.sh, on nightly Rust).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/cluster.sh up
cargo fmt --all -- --check
cargo fmt --all --manifest-path fuzz/Cargo.toml -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo xtask generate --check
cargo test --workspace --no-fail-fast
bash scripts/fuzz.sh
