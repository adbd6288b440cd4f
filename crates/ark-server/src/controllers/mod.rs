//! The controllers: each reads its objects, decides with pure functions, and writes the outcome.
//! What they share (reading objects, conditional writes, the operation and periodic loops,
//! storage locations, leader election) is in `shared`.

pub mod backup;
pub mod backup_operations;
pub mod deletion;
pub mod download_requests;
pub mod gc;
pub mod location_validation;
pub mod repository_maintenance;
pub mod restore;
pub mod schedule;
pub mod server_status;
pub mod sync;
