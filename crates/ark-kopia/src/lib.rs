//! Kopia's repository format, in Rust: the storage engine of ark's volume data.
//!
//! Velero keeps pod volume data in a kopia repository under `<prefix>/kopia/<namespace>/` of a
//! backup location. This crate reads and writes that format exactly as kopia v0.16 does (the
//! version Velero v1.18 links), so that ark, Velero and the kopia CLI read each other's snapshots
//! and deduplicate against each other's data. It knows nothing of Kubernetes: it works on an
//! [`object_store::ObjectStore`] and a prefix.
//!
//! The layers, bottom up, each in its own module:
//! - [`blobs`]: the repository's blobs in the object store;
//! - [`crypto`], [`format`]: the password, the format blob and the keys it holds;
//! - [`index`], [`epoch`], [`content`]: contents in packs, found through epoch index blobs;
//! - [`splitter`], [`object`]: objects, split into contents and listed by indirect objects;
//! - [`manifest`], [`snapshot`]: manifests, and snapshots of directory trees;
//! - [`maintenance`]: freeing what no snapshot references, by kopia's safety rules.
//!
//! `docs/repository.md` says what of kopia this implements and what it refuses, and why.

pub mod beneath;
pub mod blobs;
pub mod compression;
pub mod content;
pub mod crypto;
pub mod epoch;
pub mod format;
pub mod index;
pub mod maintenance;
pub mod manifest;
pub mod object;
pub mod repository;
mod scrypt;
pub mod snapshot;
pub mod splitter;
pub mod velero;

pub use repository::Repository;

/// What went wrong, named by the blob, content or path it concerns.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the object store: {0}")]
    Store(#[from] object_store::Error),
    #[error("blob {0} does not exist")]
    MissingBlob(String),
    #[error("no kopia repository: {0}")]
    NotARepository(String),
    #[error("invalid repository password")]
    WrongPassword,
    #[error("the repository's format: {0}")]
    Format(String),
    #[error("not supported: {0}")]
    Unsupported(String),
    #[error("blob {blob}: {reason}")]
    Corrupt { blob: String, reason: String },
    #[error("content {0} is in no index")]
    MissingContent(String),
    #[error("{0}")]
    Invalid(String),
    #[error("the repository's maintenance is owned by {owner}: not run")]
    NotOwner { owner: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn corrupt(blob: impl std::fmt::Display, reason: impl Into<String>) -> Self {
        Error::Corrupt {
            blob: blob.to_string(),
            reason: reason.into(),
        }
    }

    pub(crate) fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}

/// Fills `bytes` from the operating system's random source.
pub(crate) fn random(bytes: &mut [u8]) {
    getrandom::fill(bytes).expect("the operating system's random source");
}
