use std::process::ExitCode;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use crate::cli::Cli;

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell to print the script for
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn run(args: CompletionArgs) -> anyhow::Result<ExitCode> {
    clap_complete::generate(
        args.shell,
        &mut Cli::command(),
        "ark",
        &mut std::io::stdout(),
    );
    Ok(ExitCode::SUCCESS)
}
