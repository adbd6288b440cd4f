use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    ark::tls::install_crypto_provider();
    let cli = ark::cli::Cli::parse();
    let namespace = cli.global.namespace.clone();
    match ark::run(cli).await {
        Ok(code) => code,
        Err(error) => {
            match ark::errors::explain(&error, &namespace) {
                // The outermost context says what was being done; the explanation, what stopped it.
                Some(explained) if error.chain().count() > 1 => {
                    eprintln!("error: {error}: {explained}")
                }
                Some(explained) => eprintln!("error: {explained}"),
                None => eprintln!("error: {error:#}"),
            }
            ExitCode::FAILURE
        }
    }
}
