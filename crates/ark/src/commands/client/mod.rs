//! `ark client`: ark's own settings on this machine, one module per noun.

mod config;

use std::process::ExitCode;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Set or print ark's settings
    ///
    /// They are kept in $XDG_CONFIG_HOME/ark/config.yaml, else ~/.config/ark/config.yaml.
    #[command(subcommand)]
    Config(config::ConfigCommand),
}

pub fn run(command: ClientCommand) -> anyhow::Result<ExitCode> {
    match command {
        ClientCommand::Config(command) => config::run(command),
    }
}
