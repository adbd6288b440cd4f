//! What every process of the server runs on: the process and its terms, the controller loops and
//! their contexts, reading and writing ark's objects, Events and metrics.

pub mod context;
pub mod controller;
pub mod events;
pub mod metrics;
pub mod objects;
pub mod operation;
pub mod patch;
pub mod periodic;
pub mod process;
pub mod sync;
pub mod watches;
