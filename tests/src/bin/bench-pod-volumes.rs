//! Pod volume data on the real node, by ark's node agent and by Velero's, one after the other (both
//! take the host's network), each with its server and its own bucket prefix, on the same volumes:
//! - `large`, 1 GiB in 4 files of random bytes, and `small`, 100,000 files of 4 KiB, each the
//!   `emptyDir` of a pod of its own, filled from the host;
//! - per tool and volume: a first backup, a second of the unchanged volume, and a restore of the
//!   second into a namespace of its own (the pod made anew, its data written before it starts),
//!   each timed from the creation of its Backup or Restore to its final phase, and each restored
//!   volume compared with the original;
//! - the agents' peak RSS: VmHWM sampled every 100 ms from the host, for ark's agent, Velero's
//!   agent and the pod Velero's agent makes per request (`velero pod-volume backup|restore`);
//! - the floor, in the same run: reading the volume (`tar cf /dev/null`), then writing its bytes to
//!   S3 in 20 MiB objects, two at a time, and reading them back into files (bench-repository's
//!   `--op upload|download`).
//!
//! cargo build --release -p ark -p ark-tests --bins
//! target/release/bench-pod-volumes [--trees large,small] [--scale 1.0]

use std::collections::BTreeMap;
use std::path::Path;

use ark_tests::bench::{
    Cost, Sampler, Tool, agents_table, delete_namespace, each_tool, filled_volume, floors,
    measured, release_ark, tree_args, volume_of,
};
use ark_tests::kopia::{RestoredBy, assert_same_tree};
use ark_tests::{Cluster, unique_name};

/// The processes whose memory is sampled, by their command line's first two words.
const AGENTS: [(&str, &str); 3] = [
    ("ark agent", "/ark\0node-agent\0"),
    ("Velero agent", "/velero\0node-agent\0"),
    ("Velero per-request pod", "/velero\0pod-volume\0"),
];

/// The three operations of `tool` on the volume of pod `kind` in `app`, each restored volume
/// compared with `original`.
async fn run_tool(
    cluster: &Cluster,
    sampler: &Sampler,
    tool: &Tool,
    app: &str,
    kind: &str,
    original: &Path,
) -> [Cost; 3] {
    let backup = serde_json::json!({
        "includedNamespaces": [app],
        "labelSelector": { "matchLabels": { "tree": kind } },
        "ttl": "24h0m0s",
    });
    let first = measured(
        cluster,
        sampler,
        tool,
        "Backup",
        &format!("{kind}-1"),
        backup.clone(),
    )
    .await;
    let second = measured(
        cluster,
        sampler,
        tool,
        "Backup",
        &format!("{kind}-2"),
        backup,
    )
    .await;
    let target = unique_name(&format!("restored-{}", tool.name.to_lowercase()));
    let restore = measured(
        cluster,
        sampler,
        tool,
        "Restore",
        &format!("{kind}-restore"),
        serde_json::json!({
            "backupName": format!("{kind}-2"),
            "namespaceMapping": { app: target },
        }),
    )
    .await;
    let restored = volume_of(cluster, &target, kind).await;
    if tool.name == "Velero" {
        // Velero's agent writes its done mark as root; its helper (user 1000) cannot remove it.
        std::fs::remove_dir_all(restored.join(".velero")).unwrap();
    }
    assert_same_tree(
        &restored,
        original,
        if tool.name == "ark" {
            RestoredBy::Ark
        } else {
            RestoredBy::Kopia
        },
    );
    delete_namespace(cluster, &target).await;
    [first, second, restore]
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (trees, scale) = tree_args(&args);
    let cluster = Cluster::get();
    let (ark, image) = release_ark(&cluster);
    let sampler = Sampler::start(&AGENTS);

    // The volumes, filled once from the host; both tools read the same bytes.
    let app = cluster.namespace("bench-volumes").await;
    let mut volumes = BTreeMap::new();
    for kind in &trees {
        let volume = filled_volume(&cluster, &app.name, kind, scale).await;
        volumes.insert(kind.clone(), volume);
    }

    let floors = floors("bench-pod-volumes", &volumes);
    let run = async |tool: &Tool, kind: &str, volume: &Path| {
        run_tool(&cluster, &sampler, tool, &app.name, kind, volume).await
    };
    let ark = (ark.as_path(), image.as_str());
    let costs = each_tool(
        &cluster,
        ark,
        "bench-pod-volumes",
        &[],
        "Velero per-request pod",
        &volumes,
        run,
    )
    .await;
    let floors = (floors.into_iter())
        .map(|(kind, (size, floor))| (kind, (size, floor.steps())))
        .collect();
    println!("{}", agents_table("volume", "request pod", &floors, &costs));
}
