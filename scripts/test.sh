#!/usr/bin/env bash
# Every check and every test, the cluster tests included: starts the local cluster (building its
# binaries the first time), then formatting, lints, generated-file drift, the code's shape (`cargo
# xtask shape --check`: import circles, and long functions in ark-server), the workspace's tests,
# ark's end-to-end tests in groups side by side, the test ground's own test, and beside the groups
# a bounded fuzz run of every fuzz target (scripts/fuzz.sh, on nightly Rust, at the lowest CPU
# priority). Ends with a table of its phases and their wall times (docs/test-ground.md keeps the
# budget).
#
# Cargo's output is kept in ~/.cache/ark-target between runs (scripts/build-cache.sh): a fresh
# clone rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build-cache.sh

# How long one group of end-to-end tests may take before it is stopped and fails.
group_limit=${ARK_TEST_GROUP_LIMIT:-40m}

phases=()
failed=()
began=$SECONDS
logs=$(mktemp -d "${TMPDIR:-/tmp}/ark-test.XXXXXX")

report() {
  local code=$? row passed pid
  # Groups still running when the script ends early: each is a process group of its own (timeout's).
  for pid in ${running_groups:-}; do kill -- "-$pid" 2>/dev/null || true; done
  echo
  echo "test.sh: phases (wall time)"
  printf '  %-32s %8s  %s\n' phase seconds result
  for row in "${phases[@]}"; do printf '  %-32s %8s  %s\n' $row; done
  printf '  %-32s %8s\n' "total (wall)" "$((SECONDS - began))"
  passed=$(cat "$logs"/*.log 2>/dev/null | sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed.*/\1/p' |
    awk '{ n += $1 } END { print n + 0 }')
  echo "test.sh: $passed tests passed"
  if ((${#failed[@]})); then
    echo "test.sh: FAILED: ${failed[*]}"
    code=1
  elif [ "$code" != 0 ]; then
    echo "test.sh: FAILED (exit code $code)"
  fi
  rm -rf "$logs"
  exit "$code"
}
trap report EXIT

# phase NAME COMMAND...: runs COMMAND, its output shown and kept for the count of tests, and
# records its wall time; a failure is recorded and the run goes on to the next phase.
phase() {
  local name=$1 start=$SECONDS code=0
  shift
  echo "test.sh: == $name"
  # pipefail: the command's exit code, tee's being 0.
  if "$@" 2>&1 | tee "$logs/$name.log"; then code=0; else code=$?; fi
  record "$name" $((SECONDS - start)) "$code"
}

record() {
  if [ "$3" = 0 ]; then
    phases+=("$1 $2 ok")
  else
    phases+=("$1 $2 FAILED")
    failed+=("$1")
  fi
}

# The first phases stop the run when they fail: nothing after them could run.
start=$SECONDS
use_build_cache
# Test binaries built in another clone know that clone's path at compile time (cargo does not
# rebuild them for this one): insta is told where this clone's snapshots are.
export INSTA_WORKSPACE_ROOT=$PWD
bash scripts/setup.sh
seal_build_cache
record set-up $((SECONDS - start)) 0
start=$SECONDS
bash scripts/cluster.sh up
record cluster $((SECONDS - start)) 0

phase fmt bash -c 'cargo fmt --all -- --check && cargo fmt --all --manifest-path fuzz/Cargo.toml -- --check'
phase clippy cargo clippy --workspace --all-targets -- -D warnings
phase generated-files cargo xtask generate --check
phase code-shape cargo xtask shape --check
phase tests:workspace cargo test --workspace --exclude ark --no-fail-fast
phase tests:ark-unit cargo test -p ark --lib --bins --no-fail-fast

# ark's end-to-end tests are one binary (crates/ark/tests/e2e/), its areas the groups below: every
# test must be in exactly one.
e2e=(cargo test -p ark --test e2e --no-fail-fast --)
groups=(cluster node velero)
check_groups() {
  "${e2e[@]}" --exact every_test_file_is_a_module_of_the_binary
  local listed unplaced
  listed=$("${e2e[@]}" --list | sed -n 's/: test$//p')
  unplaced=$(grep -v -e '^every_test_file_is_a_module_of_the_binary$' -e '^alone::' \
    $(printf -- "-e ^%s:: " "${groups[@]}") <<<"$listed" || true)
  if [ -n "$unplaced" ]; then
    echo "test.sh: end-to-end tests in no group: $unplaced" >&2
    return 1
  fi
  echo "test.sh: $(wc -l <<<"$listed") end-to-end tests in groups ${groups[*]} and alone"
}
phase tests:e2e-build check_groups

# The groups run side by side: their tests mostly wait on the cluster, and what they cannot share
# (the real node's host network, Velero's server) they take turns on (ark_tests::Turn). Threads
# per group: the cluster group's tests are many and short.
declare -A threads=([cluster]=3 [node]=2 [velero]=2)
declare -A pids=() started=()
# The fuzz targets run beside the groups at the lowest CPU priority: the groups mostly wait on the
# cluster, and libFuzzer takes the CPU they leave (it touches no cluster). Its own process group
# (timeout's), stopped with the groups if the script ends early.
echo "test.sh: == fuzz (in the background at nice 19; its output follows when it ends)"
fuzz_started=$SECONDS
timeout --kill-after 30s "$group_limit" nice -n 19 bash scripts/fuzz.sh >"$logs/fuzz.log" 2>&1 &
fuzz_pid=$!
running_groups="${running_groups:-} $fuzz_pid"
for group in "${groups[@]}"; do
  echo "test.sh: == tests:e2e:$group (in the background; its output follows when it ends)"
  started[$group]=$SECONDS
  timeout --kill-after 30s "$group_limit" "${e2e[@]}" "$group::" --test-threads "${threads[$group]}" \
    >"$logs/tests:e2e:$group.log" 2>&1 &
  pids[$group]=$!
  running_groups="${running_groups:-} $!"
done
for _ in "${groups[@]}"; do
  code=0
  wait -n -p ended "${pids[@]}" || code=$?
  for group in "${groups[@]}"; do
    [ "${pids[$group]:-}" = "$ended" ] || continue
    echo "test.sh: == tests:e2e:$group ended (exit code $code)"
    cat "$logs/tests:e2e:$group.log"
    [ "$code" = 124 ] && echo "test.sh: tests:e2e:$group did not end within $group_limit"
    record "tests:e2e:$group" $((SECONDS - started[$group])) "$code"
    unset "pids[$group]"
    running_groups=${running_groups/ $ended/}
  done
done

# One at a time, with no other test beside them: they disturb the whole cluster while they run.
phase tests:e2e:alone "${e2e[@]}" alone:: --test-threads 1

code=0
wait "$fuzz_pid" || code=$?
echo "test.sh: == fuzz ended (exit code $code)"
cat "$logs/fuzz.log"
record fuzz $((SECONDS - fuzz_started)) "$code"
running_groups=${running_groups/ $fuzz_pid/}
