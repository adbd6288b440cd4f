//! Where ark keeps backups: Velero's bucket layout over any object store.

pub mod backoff;
pub mod credentials;
mod file_sets;
pub mod layout;
mod location;
mod store;
pub mod tarball;

pub use file_sets::{
    BackupFiles, BackupListing, BackupRecords, FinalizedFiles, PutBackupError, RestoreFiles,
    UploadError,
};
pub use location::{Location, Patience, StorageError, open, set_patience};
pub use object_store::{ObjectStore, path::Path};
pub use store::{BackupStore, StoreError};
