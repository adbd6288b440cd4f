#!/usr/bin/env bash
# The fuzz targets (fuzz/fuzz_targets/), run by cargo-fuzz (libFuzzer) on nightly Rust.
#
#   bash scripts/fuzz.sh [target...]                        each target for 15 s (the test command)
#   ARK_FUZZ_SECONDS=600 bash scripts/fuzz.sh [target...]   the long run
#
# Every target is built once per change: the build is kept in ~/.cache/ark-target/fuzz between runs
# and clones (scripts/build-cache.sh; cargo-fuzz builds through a link there to this checkout, so
# that every clone's build has the same paths). Each starts from its seeds,
# fuzz/corpus/<target>/, given to libFuzzer as a temporary copy (libFuzzer adds what it finds to
# its first corpus directory: the checkout stays clean), and replays fuzz/regressions/<target>/,
# the inputs that once failed. A failure names the input libFuzzer saved (fuzz/artifacts/) and the
# command that replays it; kept in fuzz/regressions/<target>/, it is replayed on every run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build-cache.sh
# Held already when scripts/test.sh runs this.
[ -n "${ARK_FUZZ_TARGET_DIR:-}" ] || use_build_cache
mkdir -p "$ARK_FUZZ_TARGET_DIR"
ln -sfn "$PWD" "$ARK_FUZZ_TARGET_DIR/checkout"
fuzz() { CARGO_TARGET_DIR="$ARK_FUZZ_TARGET_DIR/target" cargo +nightly fuzz "$1" --fuzz-dir "$ARK_FUZZ_TARGET_DIR/checkout/fuzz" "${@:2}"; }

# The cargo-fuzz installed when `cargo fuzz` is missing.
CARGO_FUZZ_VERSION=0.13.2
seconds=${ARK_FUZZ_SECONDS:-15}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: ARK_FUZZ_SECONDS=$seconds is not a number of seconds" >&2; exit 2; }

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "fuzz.sh: cargo-fuzz needs Rust's nightly toolchain (rustup toolchain install nightly)" >&2
  exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi

mapfile -t all < <(fuzz list)
targets=("$@")
((${#targets[@]})) || targets=("${all[@]}")
for t in "${targets[@]}"; do
  if [[ " ${all[*]} " != *" $t "* ]]; then
    echo "fuzz.sh: no fuzz target $t (there are: ${all[*]})" >&2
    exit 2
  fi
  if [[ -z $(ls -A "fuzz/corpus/$t" 2>/dev/null) ]]; then
    echo "fuzz.sh: fuzz/corpus/$t/ holds no seed" >&2
    exit 2
  fi
done

start=$SECONDS
fuzz build
echo "fuzz: built in $((SECONDS - start)) s; each target runs for $seconds s"

# One of libFuzzer's final statistics (-print_final_stats=1) from the log of the last run.
final_stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -n 1; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/ark-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
failed=()
for t in "${targets[@]}"; do
  corpus="$scratch/corpus/$t"
  mkdir -p "$corpus"
  cp -R "fuzz/corpus/$t/." "$corpus/"
  dirs=("$corpus")
  [[ -d fuzz/regressions/$t ]] && dirs+=("fuzz/regressions/$t")
  log="$scratch/$t.log"
  began=$SECONDS
  # libFuzzer prints a crash's stack (files and lines: fuzz/Cargo.toml keeps line tables); Rust's
  # backtraces would only repeat it, and cargo-fuzz's own is noise.
  if RUST_BACKTRACE=0 fuzz run "$t" "${dirs[@]}" -- \
      -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 \
      >"$log" 2>&1; then
    cov=$(grep -o 'DONE *cov: [0-9]*' "$log" | grep -o '[0-9]*$' | tail -n 1)
    printf 'fuzz: %-18s %3s s, %9s runs, %6s exec/s, cov %5s, %2s seeds + %s regressions, peak RSS %s MB\n' \
      "$t" "$((SECONDS - began))" "$(final_stat number_of_executed_units)" \
      "$(final_stat average_exec_per_sec)" "${cov:-?}" "$(ls -A "fuzz/corpus/$t" | wc -l)" \
      "$( (ls -A "fuzz/regressions/$t" 2>/dev/null || true) | wc -l)" "$(final_stat peak_rss_mb)"
  else
    failed+=("$t")
    mkdir -p "fuzz/artifacts/$t"
    cp "$log" "fuzz/artifacts/$t/last-run.log"
    echo "fuzz: $t FAILED; the end of libFuzzer's output (all of it: fuzz/artifacts/$t/last-run.log):"
    tail -n 80 "$log" | sed 's/^/    /'
    grep -A 1 'panicked at' "$log" | sed 's/^/fuzz: /' || true
    input=$(sed -n 's/.*Test unit written to //p' "$log" | tail -n 1)
    input=${input#"$ARK_FUZZ_TARGET_DIR/checkout/"}
    input=${input#"$PWD/"}
    if [[ -n $input ]]; then
      echo "fuzz: $t failed on $input"
      echo "  replay it:               cargo +nightly fuzz run $t $input"
      echo "  keep it as a regression: cp $input fuzz/regressions/$t/"
    else
      echo "fuzz: $t failed without saving an input (see the log above)"
    fi
  fi
done

if ((${#failed[@]})); then
  echo "fuzz: ${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} of ${#targets[@]} targets passed, $seconds s each"
