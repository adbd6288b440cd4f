//! `ark server`: the controllers that carry out Backups and Restores, check storage locations and
//! sync backups from the bucket. Each reads, decides with pure functions, then writes status.
//!
//! The floors, from the bottom: `runtime` (the process, controller loops, contexts, reading and
//! writing ark's objects, Events, metrics), `domain` (locations, repositories, snapshots, filters:
//! Velero's concepts), `records` (what a backup or a restore writes about itself), then `hooks`,
//! the `controllers` and the `node_agent`, and `server`, which runs the controllers.

pub mod backup_diff;
mod controllers;
mod domain;
pub mod fuzz;
mod hooks;
pub mod node_agent;
mod records;
mod runtime;
mod server;
pub mod verification;

pub use controllers::backup::Config as BackupConfig;
pub use controllers::deletion::Config as DeletionConfig;
pub use controllers::restore::Config as RestoreConfig;
pub use controllers::restore::Priorities as RestorePriorities;
pub use controllers::restore::preview as restore_preview;
pub use controllers::tenants;
pub use controllers::verification::NewBackups as VerifyNewBackups;
pub use domain::snapshots::VolumeSnapshotter;
pub use domain::{locations, repositories, retention, snapshots};
pub use server::{ServerError, ServerOptions, run};
