//! Label keys Velero defines (and ark's own keys on Velero's objects), and Velero's rule for
//! turning a name into a valid label value.

/// On DeleteBackupRequests, Restores and restored objects: the backup they belong to.
pub const BACKUP_NAME: &str = "velero.io/backup-name";
/// On DeleteBackupRequests: the uid of the backup, so that a request for an earlier backup of the
/// same name is never mistaken for one of this backup.
pub const BACKUP_UID: &str = "velero.io/backup-uid";
/// On restored objects: the restore that created them.
pub const RESTORE_NAME: &str = "velero.io/restore-name";
/// On synced Backups: the location they were found in.
pub const STORAGE_LOCATION: &str = "velero.io/storage-location";
/// On PodVolumeRestores: the restore's uid.
pub const RESTORE_UID: &str = "velero.io/restore-uid";
/// On PodVolumeBackups and PodVolumeRestores: the uid of the pod, and of its volume's claim.
pub const POD_UID: &str = "velero.io/pod-uid";
pub const PVC_UID: &str = "velero.io/pvc-uid";
/// On PodVolumeBackups: the claim's name (an annotation).
pub const PVC_NAME: &str = "velero.io/pvc-name";
/// On BackupRepositories: what they are the repository of.
pub const VOLUME_NAMESPACE: &str = "velero.io/volume-namespace";
pub const REPOSITORY_TYPE: &str = "velero.io/repository-type";
/// On DataUploads: the item operation they carry out (`du-<backup uid>.<claim uid>`, made valid).
pub const ASYNC_OPERATION_ID: &str = "velero.io/async-operation-id";
/// On a data mover's exposing pod: the DataUpload it exposes a snapshot for.
pub const DATA_UPLOAD: &str = "velero.io/data-upload";
/// On a data mover's restore pod: the DataDownload it holds the new volume for.
pub const DATA_DOWNLOAD: &str = "velero.io/data-download";
/// On a request whose volume is being exposed, or is exposed and waits for its data to move:
/// what Velero's agents count against `loadConcurrency.prepareQueueLength`.
pub const EXPOSE_ON_GOING: &str = "velero.io/expose-on-going";
/// In a restored claim's selector and on the volume made for it: the claim waits for the volume
/// its DataDownload writes, and no other is provisioned for it.
pub const DYNAMIC_PV_RESTORE: &str = "velero.io/dynamic-pv-restore";
/// On Backups that garbage collection could not act on, with the reason.
pub const GC_FAILURE: &str = "velero.io/gc-failure";
/// On Backups a schedule made: the schedule (Velero's metrics are labelled with it).
pub const SCHEDULE_NAME: &str = "velero.io/schedule-name";
/// On an item, `true` keeps it out of every backup; on a namespace, the namespace and all in it
/// (Velero's rule; users put it on credentials so that they never reach a bucket).
pub const EXCLUDE_FROM_BACKUP: &str = "velero.io/exclude-from-backup";
/// ark's own: on a tenant's request mirrored into ark's namespace (a Backup, a Restore...), the
/// tenant's namespace.
pub const TENANT_NAMESPACE: &str = "ark.io/tenant-namespace";
/// ark's own annotation: on a backup garbage collection keeps past its TTL, the schedule whose
/// last good (newest Completed) backup it is.
pub const KEPT_AS_LAST_GOOD: &str = "ark.io/kept-as-last-good-of";
/// ark's own annotation: on a Schedule, the retention rules its backups are kept by
/// (`last=7,daily=14,weekly=8,monthly=12,yearly=3`; see ark-server's `domain::retention`).
pub const RETENTION: &str = "ark.io/retention";
/// ark's own annotations of a data download's hand-over, so that an agent stopped in the middle
/// of it can settle it when it starts again: on the DataDownload, the volume it is handing over;
/// on that volume, the download (`<namespace>/<name>`) and the reclaim policy it had.
pub const HANDING_OVER_VOLUME: &str = "ark.io/handing-over-volume";
pub const HANDED_OVER_BY: &str = "ark.io/handed-over-by";
pub const RECLAIM_POLICY: &str = "ark.io/reclaim-policy";

/// The longest a label value may be; a longer name is shortened to it ([`valid_label_value`]).
pub const MAX_LABEL_VALUE: usize = 63;
const HASH_DIGITS: usize = 6;

/// Velero's `label.GetValidName`: a value of at most 63 characters. A longer one keeps its first 57
/// characters and appends the first 6 hex digits of the SHA-256 of the whole value, so two long
/// names that share a prefix still get different labels.
pub fn valid_label_value(value: &str) -> String {
    if value.len() <= MAX_LABEL_VALUE {
        return value.to_string();
    }
    let digest = hex_sha256(value.as_bytes());
    // 57 bytes, as Velero cuts them; fewer when that would split a character (Go would keep the
    // broken bytes; a label value of Kubernetes names is ASCII either way).
    let keep = (0..=MAX_LABEL_VALUE - HASH_DIGITS)
        .rev()
        .find(|at| value.is_char_boundary(*at))
        .unwrap_or(0);
    format!("{}{}", &value[..keep], &digest[..HASH_DIGITS])
}

/// The labels that tie a DeleteBackupRequest to one backup: its name and its uid.
pub fn for_backup(name: &str, uid: &str) -> std::collections::BTreeMap<String, String> {
    std::collections::BTreeMap::from([
        (BACKUP_NAME.to_string(), valid_label_value(name)),
        (BACKUP_UID.to_string(), uid.to_string()),
    ])
}

/// The label selector matching exactly those labels.
pub fn selector_for_backup(name: &str, uid: &str) -> String {
    format!(
        "{BACKUP_NAME}={},{BACKUP_UID}={uid}",
        valid_label_value(name)
    )
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_kept() {
        assert_eq!(valid_label_value("nightly"), "nightly");
        let exactly = "a".repeat(63);
        assert_eq!(valid_label_value(&exactly), exactly);
    }

    #[test]
    fn long_values_are_cut_and_hashed_like_velero() {
        // Velero's own test vector (pkg/label/label_test.go).
        let name = "this-is-a-very-long-backup-name-that-exceeds-the-sixty-three-character-limit";
        let value = valid_label_value(name);
        assert_eq!(value.len(), 63);
        assert_eq!(&value[..57], &name[..57]);
        assert_eq!(&value[57..], &hex_sha256(name.as_bytes())[..6]);
    }
}
