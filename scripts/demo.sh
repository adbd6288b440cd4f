#!/usr/bin/env bash
# The main job, end to end on the local cluster, with a `file` bucket:
#   install ark (its manifests checked by the API server first) and run the server as a process
#   with nothing but the installed ServiceAccount's token (kwok runs no containers);
#   back up an application, lose its namespace, restore it with a hooks file (an init container
#   that rehydrates the database, an exec hook that checks it) and describe each hook's result;
#   delete the backup while its location is read-only (the attempt fails and shows in `backup
#   describe`), then again with the location writable; show the bucket empty; uninstall.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh >/dev/null
bash scripts/cluster.sh up
set -a; source .cluster/cluster.env; set +a

export PATH=$PWD/target/debug:$PATH
export ARK_NAMESPACE=ark-demo
work=.cluster/demo
bucket=$PWD/$work/bucket

say() { printf '\n# %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; }
step() { show "$*"; "$@"; }

kubectl delete namespace shop "$ARK_NAMESPACE" --ignore-not-found --wait >/dev/null
rm -rf "$work" && mkdir -p "$bucket"

say "Install: the manifests, checked by the API server without applying them"
step kubectl create namespace "$ARK_NAMESPACE"
show "ark install --provider file --bucket $bucket --dry-run -o yaml | kubectl apply --dry-run=server -f - | grep -c '(server dry run)'"
ark install --provider file --bucket "$bucket" --dry-run -o yaml \
  | kubectl apply --dry-run=server -f - 2>/dev/null | grep -c "(server dry run)"
say "Install for real (server-side apply; a second run would print 'unchanged' for each)"
show "ark install --provider file --bucket $bucket | grep -v customresourcedefinition"
ark install --provider file --bucket "$bucket" | grep -v customresourcedefinition

say "The server runs here with the installed ServiceAccount's token and nothing else"
kubectl config view --raw --minify >"$work/kubeconfig"
token=$(kubectl -n "$ARK_NAMESPACE" create token ark)
kubectl --kubeconfig "$work/kubeconfig" config set-credentials ark --token="$token" >/dev/null
kubectl --kubeconfig "$work/kubeconfig" config set-context --current --user=ark >/dev/null
KUBECONFIG=$work/kubeconfig ark server --scratch-dir "$work/scratch" \
  --backup-sync-period 10s --store-validation-frequency 5s 2>"$work/server.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
show "ark install --provider file --bucket $bucket --wait --timeout 1m | tail -1"
ark install --provider file --bucket "$bucket" --wait --timeout 1m | tail -1

say "An application with a database"
kubectl apply -f examples/shop.yaml >/dev/null
kubectl -n shop wait --for=condition=Ready pod/db --timeout=60s >/dev/null
step kubectl -n shop get pods
step ark backup create nightly --include-namespaces shop --wait

say "Disaster"
step kubectl delete namespace shop --wait

say "Restore with hooks: restore-data runs before the database starts, then the check runs in it"
step ark restore create back --from-backup nightly --hooks-file examples/hooks/demo-database.yaml --wait
step kubectl -n shop get pod db -o jsonpath='{range .spec.initContainers[*]}{.name}{"\n"}{end}'
step ark restore describe back

say "Delete the backup while its location is read-only: refused, and recorded"
kubectl -n "$ARK_NAMESPACE" patch backupstoragelocation default --type merge \
  -p '{"spec":{"accessMode":"ReadOnly"}}' >/dev/null
step ark backup delete nightly --confirm --wait || echo "(exit code $?)"
step ark backup describe nightly

say "Writable again: the deletion goes through"
kubectl -n "$ARK_NAMESPACE" patch backupstoragelocation default --type merge \
  -p '{"spec":{"accessMode":"ReadWrite"}}' >/dev/null
sleep 6 # one validation period, so that the server sees the location writable
step ark backup delete nightly --confirm --wait
step ark backup get
show "find $bucket -type f | wc -l"
find "$bucket" -type f | wc -l

say "Uninstall: everything ark installed goes, the bucket is not touched"
kill $server
show "ark uninstall --confirm | grep -v customresourcedefinition"
ark uninstall --confirm | grep -v customresourcedefinition
step kubectl delete namespace "$ARK_NAMESPACE"
