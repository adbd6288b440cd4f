//! `ark completion SHELL`: the script that registers ark's completion, names from the cluster
//! included (see `crate::complete`).

use std::io::Write as _;
use std::process::ExitCode;

use clap::Args;

use crate::complete::{Shell, registration};

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell to print the script for
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn run(args: CompletionArgs) -> anyhow::Result<ExitCode> {
    std::io::stdout().write_all(&registration(args.shell))?;
    Ok(ExitCode::SUCCESS)
}
