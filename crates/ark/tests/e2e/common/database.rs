//! PostgreSQL on the real node over a CSI claim: the application of the round trips that must
//! bring a database's rows back (CSI snapshots, moved snapshot data).

use ark_tests::Cluster;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use serde_json::json;

/// A claim of 1 GiB of the CSI test ground's class `ark-csi`, labelled `app: db`.
pub fn claim(name: &str) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { "app": "db" } },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "ark-csi",
            "resources": { "requests": { "storage": "1Gi" } },
        },
    }))
    .unwrap()
}

/// PostgreSQL on the real node, its data directory on the claim `claim` (an init container gives
/// the volume to postgres's user first).
pub fn database(cluster: &Cluster, claim: &str) -> Pod {
    cluster.on_real_node(json!({
        "metadata": { "name": "db", "labels": { "app": "db" } },
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "initContainers": [{
                "name": "own", "image": "ark.local/postgres:15", "imagePullPolicy": "Never",
                "securityContext": { "runAsUser": 0 },
                "command": ["chown", "999:999", "/data"],
                "volumeMounts": [{ "name": "data", "mountPath": "/data" }],
            }],
            "containers": [{
                "name": "postgres", "image": "ark.local/postgres:15", "imagePullPolicy": "Never",
                "securityContext": { "runAsUser": 999, "runAsGroup": 999 },
                "command": ["sh", "-c", "[ -s /data/pg/PG_VERSION ] || initdb -D /data/pg --locale=C -E UTF8 -U postgres >/dev/null; exec postgres -D /data/pg -c listen_addresses= -c unix_socket_directories=/tmp -c jit=off"],
                "readinessProbe": { "exec": { "command": ["pg_isready", "-h", "/tmp", "-U", "postgres"] }, "periodSeconds": 1 },
                "volumeMounts": [{ "name": "data", "mountPath": "/data" }],
            }],
            "volumes": [{ "name": "data", "persistentVolumeClaim": { "claimName": claim } }],
        },
    }))
}

/// `psql -c SQL` in pod `db` of `namespace`: what it printed.
pub fn psql(cluster: &Cluster, namespace: &str, sql: &str) -> String {
    super::node_agent::kubectl(
        cluster,
        &[
            "-n", namespace, "exec", "db", "-c", "postgres", "--", "psql", "-q", "-h", "/tmp",
            "-U", "postgres", "-Atc", sql,
        ],
    )
}
