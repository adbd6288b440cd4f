//! A backup's CSI snapshots: each storage snapshot it records still there and ready, as its driver
//! says. The driver is asked through a VolumeSnapshotContent made from the recorded handle
//! (`Retain`, bound to nothing): the csi-snapshotter looks a pre-provisioned content's snapshot up
//! and marks it ready, or writes why not. The probe is removed after; the snapshot stays.

use std::time::Duration;

use kube::Client;
use kube::api::{DeleteParams, DynamicObject, PostParams};
use kube::runtime::wait::await_condition;

use super::Report;
use crate::domain::csi::{self, ContentStatus};
use crate::domain::snapshots::{CsiContent, Recorded};

/// How long a driver may take to say whether a snapshot exists.
const DRIVER_ANSWER: Duration = Duration::from_secs(30);

pub(super) async fn check(client: &Client, recorded: &Recorded, report: &mut Report) {
    let provider = recorded.provider.len();
    if provider > 0 {
        // Velero's volume snapshotter plugins' snapshots: ark has no plugin to ask.
        let found = format!("{provider} recorded, not checked (no snapshotter is asked)");
        report.checked("Provider snapshots", found);
    }
    let recorded = &recorded.csi;
    if recorded.is_empty() {
        return report.checked("CSI snapshots", "none recorded".into());
    }
    let mut present = 0;
    for content in recorded {
        match probe(client, content).await {
            Ok(()) => present += 1,
            Err(defect) => report.defect(format!(
                "CSI snapshot {} (VolumeSnapshotContent {}): {defect}",
                content.snapshot_handle.as_deref().unwrap_or("<no handle>"),
                content.name
            )),
        }
    }
    report.checked(
        "CSI snapshots",
        format!(
            "{present} of {} present and ready, as their drivers say",
            recorded.len()
        ),
    );
}

async fn probe(client: &Client, content: &CsiContent) -> Result<(), String> {
    let body = content
        .probe()
        .ok_or("the backup recorded no handle for it")?;
    let body: DynamicObject = serde_json::from_value(body).map_err(|e| e.to_string())?;
    let api = csi::volume_snapshot_contents(client);
    let created = (api.create(&PostParams::default(), &body).await)
        .map_err(|e| format!("asking its driver through a VolumeSnapshotContent: {e}"))?;
    let name = created.metadata.name.clone().unwrap_or_default();
    let answered = |object: Option<&DynamicObject>| {
        object.is_none_or(|o| {
            let status = ContentStatus::of(&o.data);
            status.error.is_some() || o.data.pointer("/status/readyToUse") == Some(&true.into())
        })
    };
    let watched =
        tokio::time::timeout(DRIVER_ANSWER, await_condition(api.clone(), &name, answered)).await;
    let outcome = match watched {
        Ok(Ok(Some(object))) => match ContentStatus::of(&object.data).error {
            Some(error) => Err(format!("its driver says: {error}")),
            None => Ok(()),
        },
        Ok(Ok(None)) => Err(format!(
            "the probe {name} was deleted before its driver answered"
        )),
        Ok(Err(error)) => Err(format!("watching the probe {name}: {error}")),
        Err(_) => Err(format!(
            "its driver did not say within {}s whether it exists",
            DRIVER_ANSWER.as_secs()
        )),
    };
    match api.delete(&name, &DeleteParams::default()).await {
        Ok(_) => outcome,
        Err(kube::Error::Api(status)) if status.code == 404 => outcome,
        Err(error) => Err(format!("the probe {name} could not be removed: {error}")),
    }
}
