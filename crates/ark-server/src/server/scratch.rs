//! The server's scratch space. Unpacked backups hold Secrets, so it is private: the configured
//! directory is the server's own (mode 0700, owned by it, not a link), each server process works
//! in a directory of its own inside it, and what a killed server left there is removed when the
//! next one starts. Files that need no name (tarballs, logs, resource lists) are unnamed
//! (`O_TMPFILE`): nothing can open them by path, and they vanish with the process.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// This process's scratch directory, removed when dropped; its lock tells later servers that it
/// is in use.
pub struct Scratch {
    dir: TempDir,
    _lock: File,
}

const LOCK: &str = ".lock";
const START_LOCK: &str = ".starting";

impl Scratch {
    /// Makes `root` the server's own, removes what dead servers left in it, and opens a directory
    /// of this process's own inside.
    pub fn create(root: &Path) -> std::io::Result<Scratch> {
        own_directory(root)?;
        // One server at a time cleans and claims, so none removes a directory another is claiming.
        let starting = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(root.join(START_LOCK))?;
        starting.lock()?;
        remove_left_over(root)?;
        let dir = tempfile::Builder::new().prefix("run-").tempdir_in(root)?;
        let lock = File::create(dir.path().join(LOCK))?;
        lock.lock()?;
        Ok(Scratch { dir, _lock: lock })
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

/// `root` exists as a real directory of this process's user, and only that user can enter it.
fn own_directory(root: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(root)?;
    let meta = std::fs::symlink_metadata(root)?;
    let refuse = |why: &str| Err(std::io::Error::other(why.to_string()));
    if !meta.is_dir() {
        return refuse("not a directory (a link is not accepted)");
    }
    // A file made here is ours: the directory must have the same owner.
    let probe = tempfile::tempfile_in(root)?;
    if probe.metadata()?.uid() != meta.uid() {
        return refuse("owned by another user");
    }
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700))
}

/// Everything in `root` but the start lock and the directories of live servers (whose lock is
/// held): the directories of servers that were killed, and loose files of older versions.
fn remove_left_over(root: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        if entry.file_name() == START_LOCK {
            continue;
        }
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            let live = File::open(path.join(LOCK)).is_ok_and(|lock| lock.try_lock().is_err());
            if !live {
                tracing::info!("removing {}, left by a server that stopped", path.display());
                std::fs::remove_dir_all(&path)?;
            }
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_server_s_files_go_and_a_live_one_s_stay() {
        let root = tempfile::tempdir().unwrap();
        let live = Scratch::create(root.path()).unwrap();
        std::fs::write(live.path().join("secret.json"), "{}").unwrap();
        // A killed server: its directory is there, its lock is free.
        let dead = root.path().join("run-dead");
        std::fs::create_dir_all(dead.join("restore-x/resources/secrets")).unwrap();
        std::fs::write(dead.join("restore-x/resources/secrets/s.json"), "{}").unwrap();
        File::create(dead.join(LOCK)).unwrap();
        std::fs::write(root.path().join("old-version-file"), "x").unwrap();

        let next = Scratch::create(root.path()).unwrap();
        assert!(!dead.exists());
        assert!(!root.path().join("old-version-file").exists());
        assert!(
            live.path().join("secret.json").exists(),
            "a live server's files are kept"
        );
        assert_ne!(next.path(), live.path());
        let mode = std::fs::metadata(root.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);

        let gone = live.path();
        drop(live);
        assert!(!gone.exists(), "a server that stops removes its own");
    }

    #[test]
    fn a_link_is_not_a_scratch_directory() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = root.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let link = root.path().join("scratch");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        let error = Scratch::create(&link).err().expect("refused");
        assert_eq!(
            error.to_string(),
            "not a directory (a link is not accepted)"
        );
    }
}
