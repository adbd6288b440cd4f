use std::process::ExitCode;

use clap::Args;

use super::RepositoryArgs;
use crate::cli::args::GlobalArgs;
use ark_kopia::snapshot::{self, EntryType};

#[derive(Debug, Args)]
pub struct LsArgs {
    /// The snapshot's ID (or a unique prefix of it), as `ark repository snapshots` lists it
    pub snapshot: String,
    /// The directory to list, relative to the snapshot's root
    #[arg(default_value = "/")]
    pub path: String,
    #[command(flatten)]
    pub repository: RepositoryArgs,
}

pub async fn run(global: &GlobalArgs, args: LsArgs) -> anyhow::Result<ExitCode> {
    let repo = args.repository.open(global).await?;
    let found = repo.snapshot(&args.snapshot).await?;
    let entry = repo.entry_at(&found.manifest, &args.path).await?;
    let entries = if entry.entry_type == EntryType::Directory {
        snapshot::read_directory(repo.contents(), entry.object).await?
    } else {
        vec![entry]
    };
    let table = crate::output::table(
        &["MODE", "SIZE", "MODIFIED", "NAME"],
        entries.iter().map(|e| {
            let (kind, size) = match e.entry_type {
                EntryType::Directory => ('d', e.summary.as_ref().map_or(0, |s| s.total_file_size)),
                EntryType::Symlink => ('l', e.size),
                EntryType::File => ('-', e.size),
            };
            let suffix = if e.entry_type == EntryType::Directory {
                "/"
            } else {
                ""
            };
            vec![
                format!("{kind}{}", permissions(snapshot::mode_to_unix(e.mode.0))),
                ark_api::size::human(size as u64),
                super::time(e.mtime),
                format!("{}{suffix}", e.name.escape_debug()),
            ]
        }),
    );
    println!("{table}");
    Ok(ExitCode::SUCCESS)
}

/// `rwxr-x---`, with `s` and `t` as `ls` shows them.
fn permissions(mode: u32) -> String {
    let mut out = String::new();
    for (shift, special, letter) in [(6, 0o4000, 's'), (3, 0o2000, 's'), (0, 0o1000, 't')] {
        let bits = (mode >> shift) & 7;
        out.push(if bits & 4 != 0 { 'r' } else { '-' });
        out.push(if bits & 2 != 0 { 'w' } else { '-' });
        out.push(match (bits & 1 != 0, mode & special != 0) {
            (true, true) => letter,
            (false, true) => letter.to_ascii_uppercase(),
            (true, false) => 'x',
            (false, false) => '-',
        });
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn permissions_read_as_ls_prints_them() {
        assert_eq!(super::permissions(0o755), "rwxr-xr-x");
        assert_eq!(super::permissions(0o4750), "rwsr-x---");
        assert_eq!(super::permissions(0o1777), "rwxrwxrwt");
        assert_eq!(super::permissions(0o2644), "rw-r-Sr--");
    }
}
