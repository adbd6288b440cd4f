//! Velero's concepts as the controllers use them: storage locations, kopia repositories, volume
//! snapshots and the CSI kinds, resource filters and discovery, the fields ark does not act on,
//! and (ark's own) schedules' retention rules.

pub mod csi;
pub mod discovery;
pub mod filter;
pub mod locations;
pub mod quantity;
pub mod repositories;
pub mod retention;
pub mod snapshots;
pub mod volume_policy;
