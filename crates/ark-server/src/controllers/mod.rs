//! The controllers: each reads its objects, decides with pure functions, and writes the outcome.
//! What they run on (reading objects, conditional writes, the operation and periodic loops) is in
//! `runtime`, what they write about a backup or a restore in `records`, and Velero's concepts
//! (locations, repositories, snapshots, filters) in `domain`.

pub mod backup;
pub mod backup_operations;
pub mod deletion;
pub mod download_requests;
pub mod gc;
pub mod location_validation;
pub mod repository_maintenance;
pub mod restore;
pub mod restore_finalizer;
pub mod restore_tests;
pub mod schedule;
pub mod server_status;
pub mod sync;
pub mod tenants;
pub mod verification;
