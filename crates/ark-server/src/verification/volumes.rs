//! A backup's volume data: each kopia snapshot its pod volume backups and its moved CSI snapshots
//! name, found in its repository and checked there. The pod volumes' snapshots are known from the
//! backup's files and the moved ones only once its tarball is read, so a check takes them in two
//! batches, opening each repository once.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use ark_api::PodVolumeBackup;
use ark_kopia::repository::{Reading, Repository, Snapshot, VerifyProgress};
use kube::Client;

use super::Report;
use crate::domain::repositories;
use crate::domain::snapshots::MovedSnapshot;

/// Without `--data`, one file in this many is read whole; the others' contents are looked up.
const SAMPLE_ONE_IN: u64 = 64;

/// A kopia snapshot the backup names, and what it is the data of (for messages).
struct Named {
    id: String,
    what: String,
}

/// The check of one backup's volume data in its location.
pub(super) struct Check<'a> {
    client: &'a Client,
    /// ark's namespace.
    namespace: &'a str,
    location: &'a str,
    reading: Reading,
    /// Each repository opened, by the namespace whose data it holds; or why it could not be.
    repositories: BTreeMap<String, Result<Repository, String>>,
    named: usize,
    restic: usize,
    other_locations: usize,
    progress: VerifyProgress,
    /// Its defects, kept apart while the backup's tarball is checked beside it.
    report: Report,
}

impl<'a> Check<'a> {
    pub(super) fn new(
        client: &'a Client,
        namespace: &'a str,
        location: &'a str,
        data: bool,
    ) -> Self {
        let reading = match data {
            true => Reading::All,
            false => Reading::Sample {
                one_in: SAMPLE_ONE_IN,
            },
        };
        Check {
            client,
            namespace,
            location,
            reading,
            repositories: BTreeMap::new(),
            named: 0,
            restic: 0,
            other_locations: 0,
            progress: VerifyProgress::default(),
            report: Report::default(),
        }
    }

    /// Checks the snapshots of the backup's pod volumes (restic's are counted, not read).
    pub(super) async fn pod_volumes(&mut self, pod_volumes: &[PodVolumeBackup]) {
        let mut by_repository: BTreeMap<String, Vec<Named>> = BTreeMap::new();
        for pvb in pod_volumes {
            let status = pvb.status.as_ref();
            let Some(id) = status
                .and_then(|s| s.snapshot_id.clone())
                .filter(|id| !id.is_empty())
            else {
                continue;
            };
            if pvb.spec.uploader_type.as_deref() == Some("restic") {
                self.restic += 1;
                continue;
            }
            if pvb.spec.backup_storage_location != self.location {
                self.other_locations += 1;
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
        self.read(by_repository).await;
    }

    /// Checks the snapshots the backup's CSI snapshots' data was moved into.
    pub(super) async fn moved(&mut self, moved: &[MovedSnapshot]) {
        let mut by_repository: BTreeMap<String, Vec<Named>> = BTreeMap::new();
        for moved in moved {
            if moved.location != self.location {
                self.other_locations += 1;
                continue;
            }
            let what = format!("moved snapshot data of namespace {}", moved.namespace);
            let id = moved.snapshot_id.clone();
            by_repository
                .entry(moved.namespace.clone())
                .or_default()
                .push(Named { id, what });
        }
        self.read(by_repository).await;
    }

    async fn read(&mut self, by_repository: BTreeMap<String, Vec<Named>>) {
        for (volume_namespace, named) in by_repository {
            self.named += named.len();
            if !self.repositories.contains_key(&volume_namespace) {
                let opened = repositories::open(
                    self.client,
                    self.namespace,
                    self.location,
                    &volume_namespace,
                )
                .await
                .map_err(|error| error.to_string());
                self.repositories.insert(volume_namespace.clone(), opened);
            }
            let opened = &self.repositories[&volume_namespace];
            let repository = match opened {
                Ok(repository) => repository,
                Err(error) => {
                    self.report
                        .defect(format!("{} snapshots: {error}", named.len()));
                    continue;
                }
            };
            let mut snapshots: Vec<Snapshot> = Vec::new();
            for snapshot in &named {
                match repository.snapshot(&snapshot.id).await {
                    Ok(found) => snapshots.push(found),
                    Err(error) => self.report.defect(format!(
                        "{}: snapshot {}: {error}",
                        snapshot.what, snapshot.id
                    )),
                }
            }
            let what: BTreeMap<&str, &str> = named
                .iter()
                .map(|n| (n.id.as_str(), n.what.as_str()))
                .collect();
            let errors = repository
                .verify(&snapshots, self.reading, &self.progress)
                .await;
            for error in errors {
                // Each error begins with `<snapshot id>:/<path>`.
                let owner = error.split(':').next().and_then(|id| what.get(id));
                self.report.defect(match owner {
                    Some(owner) => format!("{owner}: {error}"),
                    None => error,
                });
            }
        }
    }

    /// Adds what was checked, and the defects found, to `report`.
    pub(super) fn finish(self, report: &mut Report) {
        if self.other_locations > 0 {
            report.defect(format!(
                "{} volume data records name a location other than the backup's ({}); they are \
                 not read",
                self.other_locations, self.location
            ));
        }
        let restic = match self.restic {
            0 => String::new(),
            n => format!("; {n} pod volumes of restic's, not read"),
        };
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let checked = match self.named {
            0 => format!("none recorded{restic}"),
            named => {
                let read = match self.reading {
                    Reading::All => "every file read".to_string(),
                    Reading::Sample { .. } => format!(
                        "{} files read whole, the rest looked up",
                        load(&self.progress.read)
                    ),
                };
                format!(
                    "{named} snapshots in {} repositories: {} distinct files and directories, \
                     {read} ({} read){restic}",
                    self.repositories.len(),
                    load(&self.progress.objects),
                    ark_api::size::human(load(&self.progress.bytes)),
                )
            }
        };
        report.checked("Volume data", checked);
        report.absorb(self.report);
    }
}
