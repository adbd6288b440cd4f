//! A backup's volume data: each kopia snapshot its pod volume backups and its moved CSI snapshots
//! name, found in its repository and checked there.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use ark_kopia::repository::{Reading, Snapshot, VerifyProgress};
use kube::Client;

use super::Report;
use super::files::Found;
use crate::domain::repositories;

/// Without `--data`, one file in this many is read whole; the others' contents are looked up.
const SAMPLE_ONE_IN: u64 = 64;

/// A kopia snapshot the backup names, and what it is the data of (for messages).
struct Named {
    id: String,
    what: String,
}

/// The kopia snapshots the backup names, by repository (the namespace whose data each holds),
/// and how many of its pod volumes restic backed up (which ark does not read).
fn named(
    found: &Found,
    location: &str,
    report: &mut Report,
) -> (BTreeMap<String, Vec<Named>>, usize) {
    let mut by_repository: BTreeMap<String, Vec<Named>> = BTreeMap::new();
    let (mut other_locations, mut restic) = (0, 0);
    for pvb in &found.pod_volumes {
        let status = pvb.status.as_ref();
        let Some(id) = status
            .and_then(|s| s.snapshot_id.clone())
            .filter(|id| !id.is_empty())
        else {
            continue;
        };
        if pvb.spec.uploader_type.as_deref() == Some("restic") {
            restic += 1;
            continue;
        }
        if pvb.spec.backup_storage_location != location {
            other_locations += 1;
            continue;
        }
        let pod = &pvb.spec.pod;
        let what = format!(
            "volume {} of pod {}/{}",
            pvb.spec.volume, pod.namespace, pod.name
        );
        by_repository
            .entry(pod.namespace.clone())
            .or_default()
            .push(Named { id, what });
    }
    for moved in &found.recorded.moved {
        if moved.location != location {
            other_locations += 1;
            continue;
        }
        let what = format!("moved snapshot data of namespace {}", moved.namespace);
        let id = moved.snapshot_id.clone();
        by_repository
            .entry(moved.namespace.clone())
            .or_default()
            .push(Named { id, what });
    }
    if other_locations > 0 {
        report.defect(format!(
            "{other_locations} volume data records name a location other than the backup's \
             ({location}); they are not read"
        ));
    }
    (by_repository, restic)
}

pub(super) async fn check(
    client: &Client,
    namespace: &str,
    location: &str,
    found: &Found,
    data: bool,
    report: &mut Report,
) {
    let (by_repository, restic) = named(found, location, report);
    let restic = match restic {
        0 => String::new(),
        n => format!("; {n} pod volumes of restic's, not read"),
    };
    let named: usize = by_repository.values().map(Vec::len).sum();
    if named == 0 {
        return report.checked("Volume data", format!("none recorded{restic}"));
    }
    let reading = match data {
        true => Reading::All,
        false => Reading::Sample {
            one_in: SAMPLE_ONE_IN,
        },
    };
    let progress = VerifyProgress::default();
    for (volume_namespace, named) in &by_repository {
        let repository =
            match repositories::open(client, namespace, location, volume_namespace).await {
                Ok(repository) => repository,
                Err(error) => {
                    report.defect(format!("{} snapshots: {error}", named.len()));
                    continue;
                }
            };
        let mut snapshots: Vec<Snapshot> = Vec::new();
        for snapshot in named {
            match repository.snapshot(&snapshot.id).await {
                Ok(found) => snapshots.push(found),
                Err(error) => report.defect(format!(
                    "{}: snapshot {}: {error}",
                    snapshot.what, snapshot.id
                )),
            }
        }
        let what: BTreeMap<&str, &str> = named
            .iter()
            .map(|n| (n.id.as_str(), n.what.as_str()))
            .collect();
        for error in repository.verify(&snapshots, reading, &progress).await {
            // Each error begins with `<snapshot id>:/<path>`.
            let owner = error.split(':').next().and_then(|id| what.get(id));
            report.defect(match owner {
                Some(owner) => format!("{owner}: {error}"),
                None => error,
            });
        }
    }
    let load = |counter: &std::sync::atomic::AtomicU64| counter.load(Ordering::Relaxed);
    let read = match data {
        true => "every file read".to_string(),
        false => format!(
            "{} files read whole, the rest looked up",
            load(&progress.read)
        ),
    };
    report.checked(
        "Volume data",
        format!(
            "{named} snapshots in {} repositories: {} distinct files and directories, {read} ({} read){restic}",
            by_repository.len(),
            load(&progress.objects),
            ark_api::size::human(load(&progress.bytes)),
        ),
    );
}
