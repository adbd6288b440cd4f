use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _};

fn main() -> ExitCode {
    // A completion request from the shell (`COMPLETE=bash ark -- ark backup describe ...`, as the
    // scripts `ark completion` prints send it) is answered here, and the process exits.
    clap_complete::CompleteEnv::with_factory(ark::cli::Cli::command).complete();
    match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime.block_on(run()),
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> ExitCode {
    ark::tls::install_crypto_provider();
    let matches = ark::cli::Cli::command().get_matches();
    let mut cli = ark::cli::Cli::from_arg_matches(&matches)
        .unwrap_or_else(|error| error.format(&mut ark::cli::Cli::command()).exit());
    if matches!(
        cli.command,
        ark::cli::Command::Server(_) | ark::cli::Command::NodeAgent(_)
    ) {
        // The server and the node agent allocate and free buffers of megabytes all day (list
        // pages, items of up to 1.5 MiB, upload parts; a volume's chunks of up to 8 MiB and packs
        // of 20 MiB). glibc raises its mmap threshold after the first such free, and from then on
        // keeps them in its arenas, where the process holds them long after; a fixed threshold
        // gives them back to the system when freed, as musl (the image's C library) does.
        // SAFETY: sets an allocator parameter; no memory is touched.
        #[cfg(target_env = "gnu")]
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
        }
    } else {
        // A command whose output is piped into `head` stops quietly when the reader goes, as
        // Unix tools do, instead of failing on the write. (The server and the node agent keep
        // Rust's default: a peer closing a socket must not stop them.)
        // SAFETY: at start-up, before any thread of ours writes; restores the default action.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    // The namespace: -n, else $ARK_NAMESPACE, else `ark client config`'s, else velero.
    let configured = match matches.value_source("namespace") {
        Some(clap::parser::ValueSource::DefaultValue) => ark::client_config::namespace(),
        _ => Ok(None),
    };
    if let Ok(Some(namespace)) = &configured {
        cli.global.namespace.clone_from(namespace);
    }
    let namespace = cli.global.namespace.clone();
    let result = match configured {
        Ok(_) => ark::run(cli).await,
        Err(error) => Err(error),
    };
    match result {
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
