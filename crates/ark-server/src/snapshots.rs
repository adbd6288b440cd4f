//! The volume snapshots recorded for a backup, and deleting them. Provider snapshots (Velero's
//! `<backup>-volumesnapshots.json.gz`) go through a [`VolumeSnapshotter`]; CSI snapshots
//! (`<backup>-csi-volumesnapshotcontents.json.gz`) through the cluster's VolumeSnapshotContents.
//! A snapshot that is already gone counts as deleted, whoever reports it.

use futures::future::BoxFuture;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::{Api, Client};
use serde::Deserialize;

/// What deleting one snapshot came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deleted {
    Now,
    AlreadyGone,
}

/// Deletes provider snapshots (EBS, persistent disks, ...). ark ships none: a backup with provider
/// snapshots can be deleted only by a server given one.
pub trait VolumeSnapshotter: Send + Sync {
    /// Deletes the snapshot `id` in volume snapshot location `location`.
    fn delete<'a>(
        &'a self,
        location: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Deleted, String>>;
}

/// One entry of `<backup>-volumesnapshots.json.gz`, the fields deletion needs.
#[derive(Clone, Debug, Deserialize)]
pub struct ProviderSnapshot {
    #[serde(default)]
    pub spec: ProviderSnapshotSpec,
    #[serde(default)]
    pub status: ProviderSnapshotStatus,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSnapshotSpec {
    #[serde(default)]
    pub location: String,
    #[serde(default, rename = "persistentVolumeName")]
    pub persistent_volume_name: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct ProviderSnapshotStatus {
    #[serde(default, rename = "providerSnapshotID")]
    pub provider_snapshot_id: String,
}

/// The snapshots a backup recorded.
#[derive(Debug, Default)]
pub struct Recorded {
    pub provider: Vec<ProviderSnapshot>,
    /// Names of VolumeSnapshotContents.
    pub csi: Vec<String>,
}

impl Recorded {
    pub fn is_empty(&self) -> bool {
        self.provider.is_empty() && self.csi.is_empty()
    }
}

/// Parses the two gzip'd JSON lists (either may be absent, or `null` as Velero writes "none").
pub fn parse_recorded(provider: Option<&[u8]>, csi: Option<&[u8]>) -> Result<Recorded, String> {
    fn gunzip_json<T: serde::de::DeserializeOwned>(
        bytes: &[u8],
        what: &str,
    ) -> Result<Option<Vec<T>>, String> {
        let decoder = flate2::read::GzDecoder::new(bytes);
        serde_json::from_reader(decoder).map_err(|e| format!("{what}: {e}"))
    }
    let provider: Vec<ProviderSnapshot> = match provider {
        Some(bytes) => gunzip_json(bytes, "volume snapshots")?.unwrap_or_default(),
        None => Vec::new(),
    };
    let csi: Vec<serde_json::Value> = match csi {
        Some(bytes) => gunzip_json(bytes, "CSI volume snapshot contents")?.unwrap_or_default(),
        None => Vec::new(),
    };
    Ok(Recorded {
        provider: provider
            .into_iter()
            .filter(|s| !s.status.provider_snapshot_id.is_empty())
            .collect(),
        csi: csi
            .iter()
            .filter_map(|c| {
                c.pointer("/metadata/name")
                    .and_then(|n| n.as_str())
                    .map(str::to_string)
            })
            .collect(),
    })
}

fn volume_snapshot_contents(client: &Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("snapshot.storage.k8s.io", "v1", "VolumeSnapshotContent");
    Api::all_with(client.clone(), &ApiResource::from_gvk(&gvk))
}

/// Deletes a CSI snapshot: its VolumeSnapshotContent, set to `Delete` first so the driver removes
/// the storage snapshot with it.
pub async fn delete_csi(client: &Client, name: &str) -> Result<Deleted, String> {
    let api = volume_snapshot_contents(client);
    let gone = |e: &kube::Error| matches!(e, kube::Error::Api(s) if s.code == 404);
    let policy = serde_json::json!({ "spec": { "deletionPolicy": "Delete" } });
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&policy))
        .await
    {
        Ok(_) => {}
        Err(e) if gone(&e) => return Ok(Deleted::AlreadyGone),
        Err(e) => return Err(format!("VolumeSnapshotContent {name}: {e}")),
    }
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(Deleted::Now),
        Err(e) if gone(&e) => Ok(Deleted::AlreadyGone),
        Err(e) => Err(format!("VolumeSnapshotContent {name}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(text: &str) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn reads_velero_snapshot_records() {
        let provider = gz(
            r#"[{"spec":{"backupName":"b","location":"aws-default","persistentVolumeName":"pv-1","providerVolumeID":"vol-1"},"status":{"providerSnapshotID":"snap-1","phase":"Completed"}},{"spec":{},"status":{"phase":"Failed"}}]"#,
        );
        let csi = gz(
            r#"[{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshotContent","metadata":{"name":"snapcontent-1"}}]"#,
        );
        let recorded = parse_recorded(Some(&provider), Some(&csi)).unwrap();
        assert_eq!(recorded.provider.len(), 1);
        assert_eq!(recorded.provider[0].status.provider_snapshot_id, "snap-1");
        assert_eq!(recorded.provider[0].spec.location, "aws-default");
        assert_eq!(recorded.csi, ["snapcontent-1"]);
        assert!(parse_recorded(Some(&gz("null")), None).unwrap().is_empty());
        assert!(parse_recorded(None, None).unwrap().is_empty());
        assert!(parse_recorded(Some(b"not gzip"), None).is_err());
    }
}
