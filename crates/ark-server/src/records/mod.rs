//! What a backup or a restore writes about itself: its operation log, its results (warnings and
//! errors), its resource list, and the tarball's layout.

pub mod archive;
pub mod operation_log;
pub mod recorder;
pub mod resource_list;
pub mod results;
