#!/usr/bin/env bash
# ark's image from this checkout, with no registry and no daemon: the `ark` binary at /ark, the C
# library it links, CA certificates and a passwd naming the non-root user 65532, as a one-layer
# docker-archive tarball (scripts/node/image.py) that `ctr images import` and `docker load` take.
# The Deployment `ark install` applies runs it as it runs the Dockerfile's image.
#
# It differs from the Dockerfile's image in two things, because neither musl's Rust target nor
# the distroless base can be fetched here: the binary links this machine's glibc (copied in with
# the loader, as `ldd` lists them) instead of being static musl, and the few files distroless
# brings (CA certificates, passwd, group) are copied from this machine instead.
#
#   scripts/image.sh OUT.tar [--binary PATH ...] [--tag NAME]
# Each binary goes to /<its name>, the first being the entrypoint. Without --binary, the release
# build is made (cargo build --release -p ark). The tests pass their own debug build, so the image
# they run is the one they test; the interop tests make Velero's image the same way, from the
# `velero` and `velero-restore-helper` that scripts/velero-build.sh built.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
out="" binaries=() tag="ark.local/ark:$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -1)"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binaries+=("$2"); shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    -*) echo "image: unknown flag $1" >&2; exit 2 ;;
    *) out="$1"; shift ;;
  esac
done
[ -n "$out" ] || { echo "usage: $0 OUT.tar [--binary PATH ...] [--tag NAME]" >&2; exit 2; }
if [ ${#binaries[@]} -eq 0 ]; then
  (cd "$repo" && cargo build --release --locked -p ark --bin ark)
  binaries=("$repo/target/release/ark")
fi
for binary in "${binaries[@]}"; do
  [ -x "$binary" ] || { echo "image: no binary at $binary" >&2; exit 1; }
done

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/etc/ssl/certs" "$root/tmp"
chmod 1777 "$root/tmp"
for binary in "${binaries[@]}"; do
  cp "$binary" "$root/$(basename "$binary")"
  # The libraries and the loader, at the paths the binary names (none for a static binary).
  for lib in $(ldd "$binary" 2>/dev/null | grep -o '/[^ ]*' || true); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
done
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >"$root/etc/passwd"
echo 'nonroot:x:65532:' >"$root/etc/group"
python3 "$here/node/image.py" "$root" "$tag" "$out" --entrypoint "[\"/$(basename "${binaries[0]}")\"]" --user 65532:65532
echo "$tag"
