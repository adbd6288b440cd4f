//! The mechanisms the controllers share.

pub mod archive;
pub mod context;
pub mod controller;
pub mod csi;
pub mod discovery;
pub mod events;
pub mod filter;
pub mod leader;
pub mod locations;
pub mod metrics;
pub mod objects;
pub mod operation;
pub mod operation_log;
pub mod patch;
pub mod periodic;
pub mod quantity;
pub mod repositories;
pub mod resource_list;
pub mod results;
pub mod scratch;
pub mod snapshots;
pub mod unhonoured;
pub mod velero_server;
