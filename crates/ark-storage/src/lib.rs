//! Where ark keeps backups: Velero's bucket layout over any object store.

pub mod backoff;
pub mod credentials;
pub mod layout;
mod location;
mod store;
pub mod tarball;

pub use location::{Location, StorageError, open};
pub use object_store::{ObjectStore, path::Path};
pub use store::{BackupStore, StoreError};
