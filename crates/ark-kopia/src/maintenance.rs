//! Maintenance, by kopia's rules (`repo/maintenance`, `snapshot/snapshotgc`): what no snapshot
//! references is marked deleted, the deletions are hidden once two collections agree, and packs
//! nothing references any more are deleted, each step behind kopia's safety margins, so that a
//! writer (Velero, kopia, another ark) working at the same time never loses a byte.
//!
//! One run does what kopia's full maintenance does for an epoch-indexed repository, except
//! rewriting short packs and compacting indexes (which save space and time, not correctness).
//! Only the owner of the repository's maintenance (`default@default` for Velero's) runs it; a
//! run records itself in `kopia.maintenance` as kopia does, so kopia and Velero read its history.

use std::collections::{BTreeMap, HashSet};

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::crypto::PurposeCipher;
use crate::index::ContentId;
use crate::manifest;
use crate::object::{self, ObjectId};
use crate::repository::Repository;
use crate::snapshot::{self, EntryType};

// Defined in the files that need them (content.rs, and manifest.rs for repository.rs), which this
// one builds on; re-exported at their old paths.
pub use crate::content::Sessions;
pub use crate::manifest::{VELERO_OWNER, velero_maintenance_params as velero_params};

pub const SCHEDULE_BLOB: &str = "kopia.maintenance";
const HOUR: i64 = 3600;
/// kopia refuses to run when the store's clock and its own differ by more than this.
const MAX_CLOCK_SKEW: i64 = 300;
/// Run records kept per task (kopia v0.16 keeps 5; Velero's kopia, 50).
const RUNS_KEPT: usize = 5;

/// kopia's `SafetyParameters`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Safety {
    /// `SafetyFull`, kopia's and Velero's default: safe beside any other writer.
    Full,
    /// `SafetyNone`: frees everything unreferenced at once. Only when nothing else writes.
    None,
}

struct Margins {
    min_content_age: i64,
    margin_between_gc: i64,
    drop_extra_margin: i64,
    require_two_gc_cycles: bool,
    blob_delete_min_age: i64,
    session_expiration_age: i64,
}

impl Safety {
    fn margins(self) -> Margins {
        match self {
            Safety::Full => Margins {
                min_content_age: 24 * HOUR,
                margin_between_gc: 4 * HOUR,
                drop_extra_margin: HOUR,
                require_two_gc_cycles: true,
                blob_delete_min_age: 24 * HOUR,
                session_expiration_age: 96 * HOUR,
            },
            Safety::None => Margins {
                min_content_age: 0,
                margin_between_gc: 0,
                drop_extra_margin: 0,
                require_two_gc_cycles: false,
                blob_delete_min_age: 0,
                session_expiration_age: 0,
            },
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct RunInfo {
    start: Timestamp,
    end: Timestamp,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    success: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    error: String,
    #[serde(flatten)]
    unknown: serde_json::Map<String, serde_json::Value>,
}

/// `kopia.maintenance`'s JSON; fields ark does not know are kept as they are.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Schedule {
    #[serde(rename = "nextFullMaintenance", default = "zero_time")]
    next_full: Timestamp,
    #[serde(rename = "nextQuickMaintenance", default = "zero_time")]
    next_quick: Timestamp,
    #[serde(default, deserialize_with = "null_as_empty")]
    runs: BTreeMap<String, Vec<RunInfo>>,
    #[serde(flatten)]
    unknown: serde_json::Map<String, serde_json::Value>,
}

fn zero_time() -> Timestamp {
    "0001-01-01T00:00:00Z".parse().expect("Go's zero time")
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, Vec<RunInfo>>, D::Error> {
    Ok(Option::deserialize(d)?.unwrap_or_default())
}

impl Schedule {
    fn record(&mut self, task: &str, start: Timestamp, result: &Result<(), Error>) {
        let runs = self.runs.entry(task.into()).or_default();
        runs.insert(
            0,
            RunInfo {
                start,
                end: Timestamp::now(),
                success: result.is_ok(),
                error: result
                    .as_ref()
                    .err()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
                unknown: serde_json::Map::new(),
            },
        );
        runs.truncate(RUNS_KEPT);
    }

    /// kopia's `findSafeDropTime`: deletions made an hour before a successful collection that
    /// another successful one followed more than the margin after it ended may be hidden.
    fn safe_drop_time(&self, m: &Margins) -> Option<Timestamp> {
        let mut good: Vec<&RunInfo> = self
            .runs
            .get("snapshot-gc")
            .into_iter()
            .flatten()
            .filter(|r| r.success)
            .collect();
        if good.len() <= 1 {
            return None;
        }
        good.sort_by_key(|r| std::cmp::Reverse(r.start));
        let latest = good[0];
        for r in &good[1..] {
            if latest.start.duration_since(r.end) > SignedDuration::from_secs(m.margin_between_gc) {
                return Some(r.start - SignedDuration::from_secs(m.drop_extra_margin));
            }
        }
        None
    }
}

/// What one maintenance run did.
#[derive(Debug, Default)]
pub struct Report {
    pub contents_in_use: usize,
    pub marked_deleted: usize,
    pub undeleted: usize,
    pub kept_too_recent: usize,
    pub watermark: Option<Timestamp>,
    pub deleted_blobs: usize,
    pub deleted_bytes: u64,
    pub kept_blobs: usize,
}

impl Repository {
    fn schedule_cipher(&self) -> PurposeCipher {
        PurposeCipher::new(
            &self.config().master_key,
            self.unique_id(),
            b"maintenance schedule",
            b"maintenance",
        )
    }

    async fn read_schedule(&self) -> Result<Schedule, Error> {
        let sealed = match self.contents().blobs().get(SCHEDULE_BLOB).await {
            Ok(b) => b,
            Err(Error::MissingBlob(_)) => return Ok(Schedule::default()),
            Err(e) => return Err(e),
        };
        let plain = self
            .schedule_cipher()
            .open(&sealed)
            .ok_or_else(|| Error::corrupt(SCHEDULE_BLOB, "does not decrypt"))?;
        serde_json::from_slice(&plain).map_err(|e| Error::corrupt(SCHEDULE_BLOB, e.to_string()))
    }

    async fn write_schedule(&self, schedule: &Schedule) -> Result<(), Error> {
        let plain = serde_json::to_vec(schedule).expect("JSON");
        self.contents()
            .blobs()
            .put(SCHEDULE_BLOB, self.schedule_cipher().seal(&plain))
            .await
    }

    /// The owner of the repository's maintenance, from its latest `type: maintenance` manifest.
    pub async fn maintenance_owner(&self) -> Result<Option<String>, Error> {
        let latest = manifest::load(self.contents())
            .await?
            .into_values()
            .filter(|e| e.labels.get("type").map(String::as_str) == Some("maintenance"))
            .max_by(|a, b| a.modified.cmp(&b.modified).then_with(|| a.id.cmp(&b.id)));
        let Some(data) = latest.and_then(|e| e.data) else {
            return Ok(None);
        };
        let params: serde_json::Value = serde_json::from_str(data.get())
            .map_err(|e| Error::Invalid(format!("maintenance parameters: {e}")))?;
        Ok(params["owner"].as_str().map(str::to_string))
    }

    /// One full maintenance run, as the owner `owner` (`default@default` for Velero's).
    pub async fn run_maintenance(&self, owner: &str, safety: Safety) -> Result<Report, Error> {
        let found = self.maintenance_owner().await?;
        if found.as_deref() != Some(owner) {
            return Err(Error::NotOwner {
                owner: found.unwrap_or_else(|| "nobody".into()),
            });
        }
        let margins = safety.margins();
        let mut schedule = self.read_schedule().await?;
        let now = Timestamp::now();
        schedule.next_full = now + SignedDuration::from_hours(24);
        schedule.next_quick = now + SignedDuration::from_hours(1);
        self.write_schedule(&schedule).await?;
        // The store's clock decides every age, as kopia's `MaintenanceStartTime`.
        let start = self.contents().blobs().head(SCHEDULE_BLOB).await?.modified;
        let skew = start.duration_since(Timestamp::now()).as_secs().abs();
        if skew > MAX_CLOCK_SKEW {
            return Err(Error::Invalid(format!(
                "the object store's clock and this machine's differ by {skew} s: maintenance refused"
            )));
        }
        let mut report = Report::default();

        self.contents().refresh().await?;
        let gc_start = Timestamp::now();
        let gc = self.collect_garbage(start, &margins, &mut report).await;
        schedule.record("snapshot-gc", gc_start, &gc);
        self.write_schedule(&schedule).await?;
        gc?;

        let drop_start = Timestamp::now();
        let drop_time = if margins.require_two_gc_cycles {
            schedule.safe_drop_time(&margins)
        } else {
            Some(Timestamp::now())
        };
        if let Some(t) = drop_time {
            let current = self.contents().watermark().unwrap_or(i64::MIN);
            if t.as_second() > current {
                let result = self
                    .contents()
                    .blobs()
                    .put(
                        &format!("xw{}", t.as_second()),
                        b"deletion-watermark".to_vec(),
                    )
                    .await;
                schedule.record("full-drop-deleted-content", drop_start, &result);
                self.write_schedule(&schedule).await?;
                result?;
                report.watermark = Some(t);
            }
        }

        self.contents().refresh().await?;
        let sweep_start = Timestamp::now();
        let sweep = self
            .delete_unreferenced_blobs(start, &margins, &mut report)
            .await;
        schedule.record("full-delete-blobs", sweep_start, &sweep);
        self.write_schedule(&schedule).await?;
        sweep?;
        Ok(report)
    }

    /// Every content a snapshot (complete or not) references, each checked to be in the index.
    async fn contents_in_use(&self) -> Result<HashSet<ContentId>, Error> {
        let mut used = HashSet::new();
        let mut seen = HashSet::new();
        for s in self.snapshots().await? {
            let root = s
                .manifest
                .root_entry
                .ok_or_else(|| Error::Invalid(format!("snapshot {} has no root", s.id)))?;
            let mut stack = vec![(root.object, root.entry_type)];
            while let Some((id, kind)) = stack.pop() {
                if !seen.insert(id) {
                    continue;
                }
                self.object_contents(id, &mut used).await?;
                if kind == EntryType::Directory {
                    for child in snapshot::read_directory(self.contents(), id).await? {
                        stack.push((child.object, child.entry_type));
                    }
                }
            }
        }
        Ok(used)
    }

    /// The contents behind one object: its chunks and, for an indirect object, its lists.
    async fn object_contents(
        &self,
        id: ObjectId,
        used: &mut HashSet<ContentId>,
    ) -> Result<(), Error> {
        if id.indirection == 0 {
            if self.contents().entry(&id.content).is_none() {
                return Err(Error::MissingContent(id.content.to_string()));
            }
            used.insert(id.content);
            return Ok(());
        }
        let list = ObjectId {
            indirection: id.indirection - 1,
            ..id
        };
        Box::pin(self.object_contents(list, used)).await?;
        for chunk in object::chunks(self.contents(), id).await? {
            Box::pin(self.object_contents(chunk.object, used)).await?;
        }
        Ok(())
    }

    /// kopia's snapshot GC: unreferenced contents older than the margin are marked deleted;
    /// referenced ones that were deleted are brought back. Manifests are never touched.
    async fn collect_garbage(
        &self,
        start: Timestamp,
        m: &Margins,
        report: &mut Report,
    ) -> Result<(), Error> {
        let used = self.contents_in_use().await?;
        report.contents_in_use = used.len();
        for info in self.contents().entries() {
            if info.id.prefix() == Some(b'm') {
                continue;
            }
            if used.contains(&info.id) {
                if info.deleted {
                    self.contents().undelete(&info).await?;
                    report.undeleted += 1;
                }
                continue;
            }
            if info.deleted {
                continue;
            }
            if start.as_second() - info.timestamp < m.min_content_age {
                report.kept_too_recent += 1;
                continue;
            }
            self.contents().mark_deleted(&info);
            report.marked_deleted += 1;
        }
        self.contents().flush().await
    }

    /// kopia's `DeleteUnreferencedBlobs`: packs no index entry (deleted ones included) points to,
    /// older than the margin, of no live session; and expired session markers.
    async fn delete_unreferenced_blobs(
        &self,
        start: Timestamp,
        m: &Margins,
        report: &mut Report,
    ) -> Result<(), Error> {
        let blobs = self.contents().blobs();
        let referenced: HashSet<String> = self
            .contents()
            .entries()
            .into_iter()
            .map(|i| i.pack.to_string())
            .collect();
        let sessions = self.contents().active_sessions().await?;
        let cutoff = start + SignedDuration::from_secs(1);
        let mut candidates = Vec::new();
        for prefix in ["p", "q", "s"] {
            candidates.extend(blobs.list(prefix).await?);
        }
        for b in candidates {
            if referenced.contains(&b.id) || b.modified > cutoff {
                report.kept_blobs += 1;
                continue;
            }
            if cutoff.duration_since(b.modified) < SignedDuration::from_secs(m.blob_delete_min_age)
            {
                report.kept_blobs += 1;
                continue;
            }
            let live_session = crate::content::session_of(&b.id)
                .and_then(|s| sessions.get(s))
                .is_some_and(|checkpoint| {
                    cutoff.duration_since(*checkpoint)
                        < SignedDuration::from_secs(m.session_expiration_age)
                });
            if live_session {
                report.kept_blobs += 1;
                continue;
            }
            blobs.delete(&b.id).await?;
            report.deleted_blobs += 1;
            report.deleted_bytes += b.length;
        }
        Ok(())
    }
}
