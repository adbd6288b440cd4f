//! Velero's bucket layout: `<prefix>/backups/<backup>/...` and `<prefix>/restores/<restore>/...`.

use object_store::path::Path;

/// The top-level folders Velero accepts in a bucket; anything else under the prefix means the
/// location is not a backup store.
pub const TOP_LEVEL_FOLDERS: [&str; 6] = [
    "backups", "restores", "restic", "metadata", "plugins", "kopia",
];

/// Paths of one backup store: a bucket with an optional prefix.
#[derive(Clone, Debug)]
pub struct Layout {
    prefix: Option<String>,
}

impl Layout {
    pub fn new(prefix: Option<&str>) -> Self {
        let prefix = prefix
            .map(|p| p.trim_matches('/').to_string())
            .filter(|p| !p.is_empty());
        Self { prefix }
    }

    pub fn prefix(&self) -> Option<&str> {
        self.prefix.as_deref()
    }

    /// The prefix as a path, `None` for the bucket's root.
    pub fn root(&self) -> Option<Path> {
        self.prefix.as_deref().map(Path::from)
    }

    fn path(&self, parts: &[&str]) -> Path {
        let joined = parts.join("/");
        match &self.prefix {
            Some(prefix) => Path::from(format!("{prefix}/{joined}")),
            None => Path::from(joined),
        }
    }

    /// The kopia repository holding the volume data of one namespace's pods:
    /// `<prefix>/kopia/<namespace>` (Velero's `getStorageVariables`).
    pub fn kopia_repository(&self, volume_namespace: &str) -> Path {
        self.path(&["kopia", volume_namespace])
    }

    pub fn backups_dir(&self) -> Path {
        self.path(&["backups"])
    }

    pub fn backup_dir(&self, backup: &str) -> Path {
        self.path(&["backups", backup])
    }

    /// `velero-backup.json`: the Backup object; its presence is what makes a backup exist.
    pub fn backup_metadata(&self, backup: &str) -> Path {
        self.path(&["backups", backup, "velero-backup.json"])
    }

    pub fn backup_contents(&self, backup: &str) -> Path {
        self.path(&["backups", backup, &format!("{backup}.tar.gz")])
    }

    pub fn backup_log(&self, backup: &str) -> Path {
        self.path(&["backups", backup, &format!("{backup}-logs.gz")])
    }

    pub fn backup_resource_list(&self, backup: &str) -> Path {
        self.path(&[
            "backups",
            backup,
            &format!("{backup}-resource-list.json.gz"),
        ])
    }

    pub fn backup_results(&self, backup: &str) -> Path {
        self.path(&["backups", backup, &format!("{backup}-results.gz")])
    }

    pub fn backup_volume_snapshots(&self, backup: &str) -> Path {
        self.path(&[
            "backups",
            backup,
            &format!("{backup}-volumesnapshots.json.gz"),
        ])
    }

    pub fn backup_csi_snapshot_contents(&self, backup: &str) -> Path {
        self.path(&[
            "backups",
            backup,
            &format!("{backup}-csi-volumesnapshotcontents.json.gz"),
        ])
    }

    /// `<backup>-volumeinfo.json.gz`: Velero's list of the backup's volumes and how each was kept
    /// (since v1.13); its CSI entries are what tells deletion to look for snapshots in the tarball.
    pub fn backup_volume_info(&self, backup: &str) -> Path {
        self.path(&["backups", backup, &format!("{backup}-volumeinfo.json.gz")])
    }

    /// ark's record of each pod's backup hooks (Velero keeps none; Velero ignores extra files).
    /// The backup's PodVolumeBackups as they ended (Velero's file, read by its sync and restore).
    pub fn backup_pod_volume_backups(&self, backup: &str) -> Path {
        self.path(&[
            "backups",
            backup,
            &format!("{backup}-podvolumebackups.json.gz"),
        ])
    }

    /// `<backup>-itemoperations.json.gz`: the asynchronous operations the backup waits for, and
    /// how each ended.
    pub fn backup_item_operations(&self, backup: &str) -> Path {
        self.path(&[
            "backups",
            backup,
            &format!("{backup}-itemoperations.json.gz"),
        ])
    }

    pub fn backup_hook_results(&self, backup: &str) -> Path {
        self.path(&["backups", backup, &format!("{backup}-hook-results.json.gz")])
    }

    pub fn restore_dir(&self, restore: &str) -> Path {
        self.path(&["restores", restore])
    }

    pub fn restore_log(&self, restore: &str) -> Path {
        self.path(&["restores", restore, &format!("restore-{restore}-logs.gz")])
    }

    pub fn restore_results(&self, restore: &str) -> Path {
        self.path(&[
            "restores",
            restore,
            &format!("restore-{restore}-results.gz"),
        ])
    }

    /// ark's record of each restored pod's hooks (Velero keeps none; Velero ignores extra files).
    pub fn restore_hook_results(&self, restore: &str) -> Path {
        self.path(&[
            "restores",
            restore,
            &format!("restore-{restore}-hook-results.json.gz"),
        ])
    }

    pub fn restore_resource_list(&self, restore: &str) -> Path {
        self.path(&[
            "restores",
            restore,
            &format!("restore-{restore}-resource-list.json.gz"),
        ])
    }

    /// The key a Velero DownloadRequest target names: `kind` is one of Velero's
    /// `DownloadTargetKind`s, `name` the backup's or the restore's; None for any other kind.
    pub fn download_target(&self, kind: &str, name: &str) -> Option<Path> {
        let backup_file = |suffix: &str| self.path(&["backups", name, &format!("{name}{suffix}")]);
        Some(match kind {
            "BackupContents" => self.backup_contents(name),
            "BackupLog" => self.backup_log(name),
            "BackupResourceList" => self.backup_resource_list(name),
            "BackupResults" => self.backup_results(name),
            "BackupVolumeSnapshots" => self.backup_volume_snapshots(name),
            "CSIBackupVolumeSnapshotContents" => self.backup_csi_snapshot_contents(name),
            "BackupItemOperations" => self.backup_item_operations(name),
            "CSIBackupVolumeSnapshots" => backup_file("-csi-volumesnapshots.json.gz"),
            "BackupVolumeInfos" => self.backup_volume_info(name),
            "RestoreLog" => self.restore_log(name),
            "RestoreResults" => self.restore_results(name),
            "RestoreResourceList" => self.restore_resource_list(name),
            "RestoreItemOperations" => self.path(&[
                "restores",
                name,
                &format!("restore-{name}-itemoperations.json.gz"),
            ]),
            "RestoreVolumeInfo" => {
                self.path(&["restores", name, &format!("{name}-volumeinfo.json.gz")])
            }
            _ => return None,
        })
    }

    /// Whether a DownloadRequest target kind names a restore's file (else a backup's).
    pub fn is_restore_target(kind: &str) -> bool {
        kind.starts_with("Restore")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_velero_layout() {
        let layout = Layout::new(Some("/cluster-a/"));
        assert_eq!(
            layout.backup_metadata("b1").as_ref(),
            "cluster-a/backups/b1/velero-backup.json"
        );
        assert_eq!(
            layout.backup_contents("b1").as_ref(),
            "cluster-a/backups/b1/b1.tar.gz"
        );
        assert_eq!(
            layout.restore_results("r1").as_ref(),
            "cluster-a/restores/r1/restore-r1-results.gz"
        );
        let bare = Layout::new(None);
        assert_eq!(bare.backup_log("b1").as_ref(), "backups/b1/b1-logs.gz");
        assert_eq!(Layout::new(Some("")).backups_dir().as_ref(), "backups");
    }

    #[test]
    fn download_targets_are_velero_s_keys() {
        let layout = Layout::new(Some("p"));
        for (kind, name, key) in [
            ("BackupContents", "b", "p/backups/b/b.tar.gz"),
            ("BackupLog", "b", "p/backups/b/b-logs.gz"),
            ("BackupVolumeInfos", "b", "p/backups/b/b-volumeinfo.json.gz"),
            (
                "CSIBackupVolumeSnapshots",
                "b",
                "p/backups/b/b-csi-volumesnapshots.json.gz",
            ),
            (
                "BackupItemOperations",
                "b",
                "p/backups/b/b-itemoperations.json.gz",
            ),
            ("RestoreLog", "r", "p/restores/r/restore-r-logs.gz"),
            (
                "RestoreItemOperations",
                "r",
                "p/restores/r/restore-r-itemoperations.json.gz",
            ),
            (
                "RestoreVolumeInfo",
                "r",
                "p/restores/r/r-volumeinfo.json.gz",
            ),
        ] {
            assert_eq!(
                layout.download_target(kind, name).unwrap().as_ref(),
                key,
                "{kind}"
            );
        }
        assert_eq!(layout.download_target("Secrets", "b"), None);
        assert!(Layout::is_restore_target("RestoreResults"));
        assert!(!Layout::is_restore_target("BackupResults"));
    }
}
