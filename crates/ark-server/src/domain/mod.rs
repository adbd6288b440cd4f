//! Velero's concepts as the controllers use them: storage locations, kopia repositories, volume
//! snapshots and the CSI kinds, resource filters and discovery, and the fields ark does not act on.

pub mod csi;
pub mod discovery;
pub mod filter;
pub mod locations;
pub mod quantity;
pub mod repositories;
pub mod snapshots;
pub mod volume_policy;
