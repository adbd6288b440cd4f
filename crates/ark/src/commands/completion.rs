use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::{Cli, CompletionArgs};

pub fn run(args: CompletionArgs) -> anyhow::Result<ExitCode> {
    clap_complete::generate(
        args.shell,
        &mut Cli::command(),
        "ark",
        &mut std::io::stdout(),
    );
    Ok(ExitCode::SUCCESS)
}
