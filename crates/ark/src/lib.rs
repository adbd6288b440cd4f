//! The `ark` command line: a clap tree whose modules mirror the commands (`ark backup get` lives in
//! `commands::backup::get`, beside its arguments), one error type at the edge (anyhow), output as
//! table, JSON or YAML.

pub mod cli;
pub mod client_config;
mod commands;
pub mod complete;
mod context;
mod describe;
pub mod errors;
mod output;
pub mod tls;

pub use commands::run;
