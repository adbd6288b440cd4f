//! `cargo xtask generate [--check]`: shell completions and man pages from the code. (The CRDs in
//! config/crd/ are Velero's own files, not generated: see config/crd/README.md.)
//! `cargo xtask cluster up|down|status`: the local test cluster (scripts/cluster.sh).
//! `cargo xtask shape [--check]`: long functions, import circles and the like (shape.rs).

mod shape;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use ark::complete::{Shell, registration};
use clap::{CommandFactory, Parser, Subcommand};

#[derive(Parser)]
#[command(name = "xtask")]
enum Task {
    /// Write completions/ and man/ from the code
    Generate {
        /// Write nothing; fail if any generated file differs from what is committed
        #[arg(long)]
        check: bool,
    },
    /// Manage the local test cluster (kube-apiserver, etcd, kwok, SeaweedFS)
    Cluster {
        #[command(subcommand)]
        action: ClusterAction,
    },
    /// Report long functions, functions taking the log and the results, import circles between
    /// files and imports from the crate root, per crate
    Shape(shape::ShapeArgs),
}

#[derive(Subcommand)]
enum ClusterAction {
    /// Build (first time) and start the cluster and S3; a no-op when they already run
    Up,
    /// Stop everything `up` started and remove its state
    Down,
    /// Say what runs
    Status,
}

fn main() -> anyhow::Result<ExitCode> {
    // Read at run time (cargo sets it for `cargo xtask`): the build is kept between clones
    // (scripts/build-cache.sh), so a path compiled in would name another checkout.
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").ok_or_else(|| {
        anyhow::anyhow!("run xtask as `cargo xtask`, which sets CARGO_MANIFEST_DIR")
    })?;
    let root = Path::new(&manifest_dir).parent().unwrap().to_path_buf();
    match Task::parse() {
        Task::Generate { check } => generate(&root, check),
        Task::Shape(args) => shape::run(&root, args),
        Task::Cluster { action } => {
            let action = match action {
                ClusterAction::Up => "up",
                ClusterAction::Down => "down",
                ClusterAction::Status => "status",
            };
            let status = std::process::Command::new("bash")
                .arg(root.join("scripts/cluster.sh"))
                .arg(action)
                .status()
                .context("cannot run scripts/cluster.sh")?;
            Ok(if status.success() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}

/// Every generated file, keyed by its path relative to the repository root.
fn generated_files() -> anyhow::Result<BTreeMap<PathBuf, Vec<u8>>> {
    let mut files = BTreeMap::new();
    // What `ark completion SHELL` prints: a script that calls `ark` back on every completion.
    for (shell, file) in [
        (Shell::Bash, "ark.bash"),
        (Shell::Zsh, "_ark"),
        (Shell::Fish, "ark.fish"),
        (Shell::Powershell, "_ark.ps1"),
        (Shell::Elvish, "ark.elv"),
    ] {
        files.insert(PathBuf::from("completions").join(file), registration(shell));
    }
    let command = ark::cli::Cli::command();
    add_man_pages(&mut files, command, "ark")?;
    Ok(files)
}

/// `ark.1`, `ark-backup.1`, `ark-backup-create.1`, ...: one page per command, as git does.
fn add_man_pages(
    files: &mut BTreeMap<PathBuf, Vec<u8>>,
    command: clap::Command,
    name: &str,
) -> anyhow::Result<()> {
    let command = command.name(name.to_string());
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone()).render(&mut page)?;
    files.insert(PathBuf::from("man").join(format!("{name}.1")), page);
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        add_man_pages(files, sub.clone(), &format!("{name}-{}", sub.get_name()))?;
    }
    Ok(())
}

fn generate(root: &Path, check: bool) -> anyhow::Result<ExitCode> {
    let files = generated_files()?;
    let mut drifted = Vec::new();
    for (path, content) in &files {
        let full = root.join(path);
        if std::fs::read(&full).ok().as_deref() == Some(content.as_slice()) {
            continue;
        }
        if check {
            drifted.push(path.display().to_string());
        } else {
            std::fs::create_dir_all(full.parent().unwrap())?;
            std::fs::write(&full, content)
                .with_context(|| format!("writing {}", full.display()))?;
            println!("wrote {}", path.display());
        }
    }
    // A file in a generated directory that the code no longer produces is drift too.
    for dir in ["completions", "man"] {
        for entry in std::fs::read_dir(root.join(dir))
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = Path::new(dir).join(entry.file_name());
            if !files.contains_key(&path) {
                if check {
                    drifted.push(format!("{} (no longer generated)", path.display()));
                } else {
                    std::fs::remove_file(entry.path())?;
                    println!("removed {}", path.display());
                }
            }
        }
    }
    if !drifted.is_empty() {
        bail!(
            "generated files differ from the code; run `cargo xtask generate` and commit:\n  {}",
            drifted.join("\n  ")
        );
    }
    Ok(ExitCode::SUCCESS)
}
