//! Velero's uploader settings: a Backup's and a Restore's `uploaderConfig`, and the
//! `uploaderSettings` a PodVolumeBackup or PodVolumeRestore carries them in to the node agent
//! (Velero's `pkg/uploader/util`, keys and forms alike).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const PARALLEL_FILES_UPLOAD: &str = "ParallelFilesUpload";
pub const WRITE_SPARSE_FILES: &str = "WriteSparseFiles";
pub const PARALLEL_FILES_DOWNLOAD: &str = "ParallelFilesDownload";

/// A Backup's `uploaderConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploaderConfigForBackup {
    /// Files read at once by the node agent (zero or absent: its default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_files_upload: Option<i64>,
}

/// A Restore's `uploaderConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploaderConfigForRestore {
    /// Blocks of zeros written as holes, so that sparse files come back sparse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_sparse_files: Option<bool>,
    /// Files written at once by the node agent (zero or absent: its default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_files_download: Option<i64>,
}

impl UploaderConfigForBackup {
    /// The settings of its PodVolumeBackups (Velero's `StoreBackupConfig`).
    pub fn settings(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(
            PARALLEL_FILES_UPLOAD.to_string(),
            self.parallel_files_upload.unwrap_or(0).to_string(),
        )])
    }
}

impl UploaderConfigForRestore {
    /// The settings of its PodVolumeRestores (Velero's `StoreRestoreConfig`).
    pub fn settings(&self) -> BTreeMap<String, String> {
        let mut settings = BTreeMap::from([(
            WRITE_SPARSE_FILES.to_string(),
            self.write_sparse_files.unwrap_or(false).to_string(),
        )]);
        if let Some(files) = self.parallel_files_download.filter(|n| *n > 0) {
            settings.insert(PARALLEL_FILES_DOWNLOAD.to_string(), files.to_string());
        }
        settings
    }
}

/// A number of files at once from `settings` (zero when absent or not above zero: the default),
/// or why it cannot be read.
pub fn files_at_once(settings: &BTreeMap<String, String>, key: &str) -> Result<usize, String> {
    match settings.get(key) {
        None => Ok(0),
        Some(text) => text
            .trim()
            .parse::<i64>()
            .map(|n| usize::try_from(n).unwrap_or(0))
            .map_err(|_| format!("uploaderSettings {key}: {text:?} is not a number")),
    }
}

/// Whether `settings` ask for sparse writes, or why that cannot be read (Go's `ParseBool` forms).
pub fn write_sparse_files(settings: &BTreeMap<String, String>) -> Result<bool, String> {
    match settings.get(WRITE_SPARSE_FILES).map(String::as_str) {
        None => Ok(false),
        Some("1" | "t" | "T" | "true" | "TRUE" | "True") => Ok(true),
        Some("0" | "f" | "F" | "false" | "FALSE" | "False") => Ok(false),
        Some(other) => Err(format!(
            "uploaderSettings {WRITE_SPARSE_FILES}: {other:?} is not true or false"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_in_velero_s_keys_and_forms() {
        let backup = UploaderConfigForBackup {
            parallel_files_upload: Some(8),
        }
        .settings();
        assert_eq!(backup[PARALLEL_FILES_UPLOAD], "8");
        assert_eq!(files_at_once(&backup, PARALLEL_FILES_UPLOAD), Ok(8));
        let restore = UploaderConfigForRestore {
            write_sparse_files: Some(true),
            parallel_files_download: None,
        }
        .settings();
        assert_eq!(
            restore,
            BTreeMap::from([(WRITE_SPARSE_FILES.to_string(), "true".to_string())])
        );
        assert_eq!(write_sparse_files(&restore), Ok(true));
        assert_eq!(files_at_once(&restore, PARALLEL_FILES_DOWNLOAD), Ok(0));
        let bad = BTreeMap::from([(PARALLEL_FILES_UPLOAD.to_string(), "many".to_string())]);
        assert_eq!(
            files_at_once(&bad, PARALLEL_FILES_UPLOAD).unwrap_err(),
            "uploaderSettings ParallelFilesUpload: \"many\" is not a number"
        );
    }
}
