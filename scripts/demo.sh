#!/usr/bin/env bash
# The main job, end to end on the local cluster's real node, with a `file` bucket:
#   build ark's image from this checkout and install it with its node agent (the manifests checked
#   by the API server first); the server and the agent run as pods from that image;
#   a schedule backs up an application with a real PostgreSQL database: a pre hook dumps it into a
#   volume, the agent backs the volume up into the location's kopia repository, a post hook runs;
#   the schedule's restore test restores the backup into a throwaway namespace and counts the rows;
#   a row written after the backup is lost with the namespace; the restore brings the volume back
#   before anything starts, an init container loads the dump before the database starts and an
#   exec hook reads the rows back with psql (those of before the backup); describe each step;
#   delete the backup while its location is read-only (the attempt fails and shows in `backup
#   describe`), then again with the location writable; show the bucket empty; uninstall.
# It relies on nothing a test leaves behind: it starts the cluster if it does not run, and makes
# and removes everything else it uses. ARK_BIN names an ark binary to use instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${ARK_BIN:-}" ]; then
  echo "demo: building ark (the first time, about 5 minutes on 2 cores)" >&2
  cargo build --quiet -p ark --bin ark
  ARK_BIN=${CARGO_TARGET_DIR:-$PWD/target}/debug/ark
fi
# Only what the demo uses: the first cluster and its real node (the first time, their binaries
# are built: 10 to 25 minutes).
bash scripts/cluster.sh up demo
# The cluster's state, where scripts/cluster.sh keeps it (ARK_CLUSTER_STATE, as for the tests).
state=$(realpath -m "${ARK_CLUSTER_STATE:-.cluster}")
set -a; source "$state/cluster.env"; set +a

ark() { "$ARK_BIN" "$@"; }
export ARK_NAMESPACE=ark-demo
work=$state/demo
bucket=$work/bucket

say() { printf '\n# %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; }
step() { show "$*"; "$@"; }

kubectl delete namespace shop "$ARK_NAMESPACE" --ignore-not-found --wait --timeout 2m >/dev/null
rm -rf "$work" && mkdir -p "$bucket"
# The bucket is a directory on the node, where the server runs as user 65532.
chown 65532:65532 "$bucket"

say "ark's image, made from this checkout and given to the node (there is no registry)"
show "bash scripts/image.sh $work/ark.tar --binary $ARK_BIN --tag ark.local/ark:demo"
bash scripts/image.sh "$work/ark.tar" --binary "$ARK_BIN" --tag ark.local/ark:demo
bash scripts/node.sh import "$state" "$work/ark.tar"
install=(install --provider file --bucket "$bucket" --image ark.local/ark:demo
  --use-node-agent --kubelet-pods-dir "$ARK_REAL_NODE_PODS")

say "Install: the manifests, checked by the API server without applying them"
step kubectl create namespace "$ARK_NAMESPACE"
show "ark ${install[*]} --dry-run -o yaml | kubectl apply --dry-run=server -f - | grep -c '(server dry run)'"
ark "${install[@]}" --dry-run -o yaml | kubectl apply --dry-run=server -f - 2>/dev/null | grep -c "(server dry run)"
say "Install for real (server-side apply; a second run would print 'unchanged' for each)"
show "ark ${install[*]} | grep -v customresourcedefinition"
ark "${install[@]}" | grep -v customresourcedefinition

say "The test ground's networking: the local API server listens on 127.0.0.1 only, so the pod takes the host's network and is told its address"
api=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
api=${api#https://}
patch=$(cat <<JSON
{"spec":{"template":{"spec":{"hostNetwork":true,
  "nodeSelector":{"ark.test/real-node":"true"},
  "tolerations":[{"key":"ark.test/real-node","operator":"Exists","effect":"NoSchedule"}],
  "containers":[{"name":"ark","env":[{"name":"KUBERNETES_SERVICE_HOST","value":"${api%:*}"},
    {"name":"KUBERNETES_SERVICE_PORT","value":"${api##*:}"}]}]}}}}
JSON
)
kubectl -n "$ARK_NAMESPACE" patch deployment ark --patch "$patch" >/dev/null
kubectl -n "$ARK_NAMESPACE" patch daemonset node-agent --patch "${patch//\"name\":\"ark\"/\"name\":\"node-agent\"}" >/dev/null
show "ark ${install[*]} --wait --timeout 2m | tail -1"
ark "${install[@]}" --wait --timeout 2m | tail -1
step kubectl -n "$ARK_NAMESPACE" get pods -o wide

say "An application with a database (PostgreSQL 15, on the real node)"
kubectl apply -f examples/shop.yaml >/dev/null
kubectl -n shop wait --for=condition=Ready pod/db --timeout=2m >/dev/null
kubectl -n shop rollout status deployment/web --timeout=2m >/dev/null
psql=(kubectl -n shop exec db -- psql -q -h /tmp -U postgres)
"${psql[@]}" -c "create database shop"
"${psql[@]}" -d shop -c "create table customers (id int primary key, name text);
  create table orders (id int primary key, customer int references customers, item text);
  insert into customers values (1, 'ada'), (2, 'grace');
  insert into orders values (1, 1, 'tea'), (2, 1, 'scones'), (3, 2, 'coffee');"
step kubectl -n shop get pods

say "A schedule's backup: the pre hook dumps the database into the volume 'dump', the node agent backs the volume up, then the post hook runs"
step ark schedule create nightly --schedule "0 3 * * *" --include-namespaces shop \
  --restore-test-file examples/restore-tests/demo-database.yaml --restore-test-hooks-file examples/hooks/demo-database.yaml
step ark backup create nightly-1 --from-schedule nightly --wait --timeout 3m
show "ark backup describe nightly-1 --details | sed -n '/^Hooks:/,\$p'"
ark backup describe nightly-1 --details | sed -n '/^Hooks:/,$p' | sed '/^Resource List:/,$d'
step ark repository snapshots --volume-namespace shop

say "The schedule's restore test: within a minute the server restores the backup into a throwaway namespace, the hooks load the dump, psql counts the orders, the namespace goes"
deadline=$((SECONDS + 300))
until kubectl -n "$ARK_NAMESPACE" get backup nightly-1 -o jsonpath='{.metadata.annotations.ark\.io/restore-test-result}' | grep -q outcome; do
  [ "$SECONDS" -lt "$deadline" ] || { echo "demo: backup nightly-1 was not restore-tested within 5 minutes" >&2; exit 1; }
  sleep 2
done
show "ark schedule describe nightly | sed -n '/^Restore test:/,\$p'"
ark schedule describe nightly | sed -n '/^Restore test:/,$p'

say "A row written after the backup"
"${psql[@]}" -d shop -c "insert into orders values (4, 2, 'cake')"
step "${psql[@]}" -d shop -Atc "select count(*) from orders"

say "Disaster"
step kubectl delete namespace shop --wait --timeout 2m

say "Restore: the volume's data is back before anything starts, restore-data loads the dump before the database starts, then psql counts the rows"
step ark restore create back --from-backup nightly-1 --hooks-file examples/hooks/demo-database.yaml --wait --timeout 3m
step kubectl -n shop get pod db -o jsonpath='{.spec.initContainers[*].name}{"\n"}'
step kubectl -n shop logs db -c restore-data
show "ark restore describe back --details | sed -n '/^Pod Volume Restores/,/^\$/p;/^Hooks:/,/^\$/p'"
ark restore describe back --details | sed -n '/^Pod Volume Restores/,/^$/p;/^Hooks:/,/^$/p'

say "Delete the backup while its location is read-only: refused, and recorded"
kubectl -n "$ARK_NAMESPACE" patch backupstoragelocation default --type merge \
  -p '{"spec":{"accessMode":"ReadOnly"}}' >/dev/null
step ark backup delete nightly-1 --confirm --wait --timeout 2m || echo "(exit code $?)"
show "ark backup describe nightly-1 | sed -n '/^Deletion Attempts/,\$p'"
ark backup describe nightly-1 | sed -n '/^Deletion Attempts/,$p'

say "Writable again: the deletion goes through"
kubectl -n "$ARK_NAMESPACE" patch backupstoragelocation default --type merge \
  -p '{"spec":{"accessMode":"ReadWrite"}}' >/dev/null
step ark backup delete nightly-1 --confirm --wait --timeout 2m
step ark backup get
show "find $bucket/backups -type f | wc -l"
find "$bucket/backups" -type f | wc -l
say "The volume's snapshot is forgotten; maintenance frees its data (the server's runs keep kopia's safety margins: a day; at once here, nothing else writes)"
step ark repository snapshots --volume-namespace shop
step ark repository maintain --volume-namespace shop --safety none

step ark schedule delete nightly --confirm

say "Uninstall: everything ark installed goes, the bucket is not touched"
show "ark uninstall --confirm | grep -v customresourcedefinition"
ark uninstall --confirm | grep -v customresourcedefinition
step kubectl delete namespace "$ARK_NAMESPACE" shop --wait --timeout 2m
