//! A backup read back from its location and checked whole, by `ark backup verify` and by the
//! server after each backup when it is told to: every file of Velero's layout present and
//! parseable, the tarball's items matching the resource list, each kopia snapshot of its volume
//! data found in its repository and checked there (every byte with `data`, else the directories,
//! every content looked up and a sample of files read), and each CSI snapshot still there, as its
//! driver says. The outcome is recorded on the Backup ([`record`]).

mod csi;
mod files;
mod volumes;

use std::path::PathBuf;

use ark_api::Backup;
use ark_api::verification::{ANNOTATION, Outcome, Verification};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, Resource as _, ResourceExt as _};

use crate::domain::locations::{self, LocationError};
use crate::runtime::events::Events;

/// The most defects a report lists; the rest are counted.
const MAX_LISTED: usize = 1000;

/// How to verify.
pub struct Options {
    /// Read every byte of the volume data.
    pub data: bool,
    /// Where the tarball and the log are downloaded to be read.
    pub scratch: PathBuf,
}

/// What a verification checked, and the defects it found.
#[derive(Debug, Default)]
pub struct Report {
    /// What was checked, and how much of it: `("Objects", "143 items in the tarball, ...")`.
    pub checked: Vec<(&'static str, String)>,
    pub defects: Vec<String>,
    /// Defects past the first `MAX_LISTED`.
    pub unlisted: usize,
}

impl Report {
    fn checked(&mut self, what: &'static str, found: String) {
        self.checked.push((what, found));
    }

    fn defect(&mut self, defect: String) {
        match self.defects.len() < MAX_LISTED {
            true => self.defects.push(defect),
            false => self.unlisted += 1,
        }
    }

    /// Takes in what `other` checked and found, after this one's.
    fn absorb(&mut self, other: Report) {
        self.checked.extend(other.checked);
        for defect in other.defects {
            self.defect(defect);
        }
        self.unlisted += other.unlisted;
    }

    pub fn passed(&self) -> bool {
        self.defects.is_empty()
    }
}

/// Why a backup could not be verified at all (its defects are in the report, not here).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("backup {0:?} names no storage location")]
    NoLocation(String),
    #[error(transparent)]
    Location(#[from] LocationError),
}

/// Verifies `backup` (in `namespace`, ark's) in its location.
pub async fn verify(
    client: &Client,
    namespace: &str,
    backup: &Backup,
    options: &Options,
) -> Result<Report, VerifyError> {
    let name = backup.name_any();
    let location = (backup.spec.storage_location.clone())
        .filter(|location| !location.is_empty())
        .ok_or_else(|| VerifyError::NoLocation(name.clone()))?;
    let open = locations::open_named(client, namespace, &location).await?;
    let mut report = Report::default();
    let mut found = files::check(&open.store, &name, &options.scratch, &mut report).await;
    // The pod volumes' data is read while the tarball is checked (its items are parsed off the
    // async threads): together they take little more than the longer of the two. The snapshots
    // whose data was moved are named in the tarball, and read after it.
    let mut volumes = volumes::Check::new(client, namespace, &location, options.data);
    let mut objects = Report::default();
    let (held, ()) = tokio::join!(
        files::objects(&open.store, &name, &options.scratch, &found, &mut objects),
        volumes.pod_volumes(&found.pod_volumes),
    );
    report.absorb(objects);
    found.recorded.add_csi(held.contents);
    volumes.moved(&held.moved).await;
    volumes.finish(&mut report);
    csi::check(client, &found.recorded, &mut report).await;
    Ok(report)
}

/// Keeps the outcome on the Backup (its annotation), with an event: Warning `VerificationFailed`
/// naming the first defect, or Normal `Verified`. `by` says who verified.
pub async fn record(
    client: &Client,
    backup: &Backup,
    report: &Report,
    data: bool,
    by: &str,
) -> kube::Result<Verification> {
    let at = k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ");
    let verification = Verification::new(at.to_string(), data, &report.defects, by);
    let mut recorded = verification.clone();
    recorded.defects += report.unlisted as u64;
    let namespace = backup.namespace().unwrap_or_default();
    let patch = serde_json::json!({ "metadata": { "annotations": {
        ANNOTATION: serde_json::to_string(&recorded).expect("a record serializes"),
    } } });
    Api::<Backup>::namespaced(client.clone(), &namespace)
        .patch(
            &backup.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    let events = Events::new(client.clone(), by);
    let object = backup.object_ref(&());
    let scope = match data {
        true => "every byte of its volume data read",
        false => "its volume data sampled",
    };
    match recorded.outcome {
        Outcome::Passed => {
            let note = format!("verified by {by}, {scope}: no defect");
            events.normal(object, "Verified", "Verify", note).await;
        }
        Outcome::Failed => {
            let note = format!(
                "verified by {by}, {scope}: {} defects; the first: {}",
                recorded.defects,
                recorded.first_defect.as_deref().unwrap_or("")
            );
            events
                .warn(object, None, "VerificationFailed", "Verify", note)
                .await;
        }
    }
    Ok(recorded)
}
