# Sourced by scripts/test.sh and scripts/fuzz.sh: cargo's output kept between runs outside the
# checkout, so that a fresh clone rebuilds only what changed.
#
#   use_build_cache    CARGO_TARGET_DIR set to ~/.cache/ark-target/workspace (unless the caller
#                      set one), ARK_FUZZ_TARGET_DIR to ~/.cache/ark-target/fuzz; the cache is
#                      held (one test command at a time) and each tracked file whose content
#                      is as it was when the cache was last sealed gets back the mtime it had then
#   seal_build_cache   records each tracked file's content hash and mtime, after a build
#
# Cargo decides that a crate of the workspace must be rebuilt when one of its sources is newer
# than its last build. A clone gives every file the time of the clone, so without the recorded
# mtimes every clone would rebuild everything; files changed since the seal keep their new mtime
# and their crates are rebuilt. Artifact names do not depend on where the checkout is (cargo
# hashes a workspace member's path relative to the workspace root).

build_cache=${ARK_BUILD_CACHE:-$HOME/.cache/ark-target}

use_build_cache() {
  mkdir -p "$build_cache"
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$build_cache/workspace}
  export ARK_FUZZ_TARGET_DIR=${ARK_FUZZ_TARGET_DIR:-$build_cache/fuzz}
  # Held until the caller exits: two runs sharing the cache would race on the recorded mtimes. A
  # process of its own holds the lock, so that nothing the caller starts (a cluster's daemons, a
  # test's stray children) inherits it and holds it after the caller is gone.
  # The shell that called this (not $$, which a subshell shares with its parent).
  local ready owner=$BASHPID
  ready=$(mktemp -u "${TMPDIR:-/tmp}/ark-build-cache.XXXXXX")
  flock -n "$build_cache/lock" true ||
    echo "build-cache: another test command holds $build_cache/lock; waiting for it" >&2
  flock "$build_cache/lock" bash -c 'touch "$1"; while kill -0 "$2" 2>/dev/null; do sleep 1; done' \
    build-cache "$ready" "$owner" </dev/null >/dev/null 2>&1 &
  until [ -e "$ready" ]; do sleep 0.1; done
  rm -f "$ready"
  [ -f "$build_cache/sources.tsv" ] || return 0
  python3 - "$build_cache/sources.tsv" <<'PY'
import os, subprocess, sys
recorded = {}
with open(sys.argv[1]) as f:
    for line in f:
        path, blob, mtime = line.rstrip("\n").split("\t")
        recorded[path] = (blob, int(mtime))
# Files changed in the work tree since they were staged keep their mtime: their index hash
# says nothing about their content.
changed = set(subprocess.run(["git", "ls-files", "-m", "-z"], capture_output=True, check=True)
              .stdout.decode().split("\0"))
staged = subprocess.run(["git", "ls-files", "-s", "-z"], capture_output=True, check=True).stdout
restored = 0
for entry in staged.decode().split("\0"):
    if not entry:
        continue
    meta, path = entry.split("\t", 1)
    blob = meta.split()[1]
    if path in changed or recorded.get(path, (None,))[0] != blob:
        continue
    try:
        os.utime(path, ns=(recorded[path][1], recorded[path][1]))
        restored += 1
    except FileNotFoundError:
        pass
print(f"build-cache: {restored} files as they were at the last build", file=sys.stderr)
PY
}

seal_build_cache() {
  python3 - "$build_cache/sources.tsv" <<'PY'
import os, subprocess, sys
changed = set(subprocess.run(["git", "ls-files", "-m", "-z"], capture_output=True, check=True)
              .stdout.decode().split("\0"))
staged = subprocess.run(["git", "ls-files", "-s", "-z"], capture_output=True, check=True).stdout
lines = []
for entry in staged.decode().split("\0"):
    if not entry:
        continue
    meta, path = entry.split("\t", 1)
    if path in changed or not os.path.isfile(path):
        continue
    lines.append(f"{path}\t{meta.split()[1]}\t{os.stat(path).st_mtime_ns}\n")
tmp = sys.argv[1] + ".tmp"
with open(tmp, "w") as f:
    f.writelines(lines)
os.replace(tmp, sys.argv[1])
PY
}
