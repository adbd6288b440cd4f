//! A directory tree read and written only through handles opened beneath its root.
//!
//! The node agent reads and writes, as root, volumes that the pods using them may change at the
//! same moment. A walk by path follows whatever a path names when it is opened: a directory
//! swapped for a symlink to `/` between its listing and its reading makes the walk read the
//! host. Here every step opens one name (never `..`, never with a `/`) relative to its
//! directory's open handle and never follows a symlink (`O_NOFOLLOW`, `AT_SYMLINK_NOFOLLOW`), so
//! such a swap is an error naming the path, and modes, owners and times are set through the same
//! handles.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Timespec, Timestamps};
use rustix::io::Errno;

use crate::Error;

/// One open directory of the tree; its path names it in errors, and is never opened again.
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// An entry's kind, as its listing or its handle says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Directory,
    File,
    Symlink,
    /// A socket, pipe or device.
    Other,
}

/// What an entry's metadata says, as read without following it.
#[derive(Clone, Copy, Debug)]
pub struct Meta {
    pub kind: Kind,
    /// The Unix mode, file type bits included.
    pub mode: u32,
    pub size: u64,
    /// Nanoseconds since the Unix epoch.
    pub mtime: i128,
    pub uid: u32,
    pub gid: u32,
}

impl Meta {
    fn of(stat: &rustix::fs::Stat) -> Meta {
        let kind = match FileType::from_raw_mode(stat.st_mode as _) {
            FileType::Directory => Kind::Directory,
            FileType::RegularFile => Kind::File,
            FileType::Symlink => Kind::Symlink,
            _ => Kind::Other,
        };
        Meta {
            kind,
            mode: stat.st_mode,
            size: stat.st_size as u64,
            mtime: i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec),
            uid: stat.st_uid,
            gid: stat.st_gid,
        }
    }
}

fn io(path: &Path, errno: Errno) -> Error {
    Error::io(path, errno.into())
}

/// An open that met a symlink where a directory or file was listed: the tree changed under the
/// walk, and the link is not followed.
fn not_followed(path: &Path, errno: Errno) -> Error {
    match errno {
        Errno::LOOP | Errno::NOTDIR => Error::Invalid(format!(
            "{} is no longer what it was listed as (a symlink or another kind now): not followed",
            path.display()
        )),
        other => io(path, other),
    }
}

/// The seconds and nanoseconds of `mtime` (nanoseconds since the epoch).
fn timespec(mtime: i128) -> Timespec {
    Timespec {
        tv_sec: mtime.div_euclid(1_000_000_000) as _,
        tv_nsec: mtime.rem_euclid(1_000_000_000) as _,
    }
}

const DIRECTORY: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

impl Dir {
    /// Opens the tree's root, which must be a directory and not a symlink.
    pub fn root(path: &Path) -> Result<Dir, Error> {
        let fd =
            rustix::fs::open(path, DIRECTORY, Mode::empty()).map_err(|e| not_followed(path, e))?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The path of entry `name`, for messages.
    pub fn shown(&self, name: &OsStr) -> PathBuf {
        self.path.join(name)
    }

    /// This directory's own metadata.
    pub fn meta(&self) -> Result<Meta, Error> {
        let stat = rustix::fs::fstat(&self.fd).map_err(|e| io(&self.path, e))?;
        Ok(Meta::of(&stat))
    }

    /// The entries, sorted by name, each with its metadata as it is listed; one gone between
    /// the listing and its metadata is left out, as kopia lists a directory.
    pub fn entries(&self) -> Result<Vec<(OsString, Meta)>, Error> {
        let mut listing = rustix::fs::Dir::read_from(&self.fd).map_err(|e| io(&self.path, e))?;
        let mut names = Vec::new();
        while let Some(entry) = listing.read() {
            let entry = entry.map_err(|e| io(&self.path, e))?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(OsString::from_vec(name.to_vec()));
            }
        }
        names.sort();
        let mut entries = Vec::with_capacity(names.len());
        for name in names {
            match rustix::fs::statat(&self.fd, &name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => entries.push((name, Meta::of(&stat))),
                Err(Errno::NOENT) => {}
                Err(e) => return Err(io(&self.shown(&name), e)),
            }
        }
        Ok(entries)
    }

    /// Opens subdirectory `name`; a symlink there is refused.
    pub fn open_dir(&self, name: &OsStr) -> Result<Dir, Error> {
        let path = self.shown(name);
        let fd = rustix::fs::openat(&self.fd, name, DIRECTORY, Mode::empty())
            .map_err(|e| not_followed(&path, e))?;
        Ok(Dir { fd, path })
    }

    /// Opens regular file `name` to read it; a symlink, pipe or device there is refused (a
    /// pipe is opened without waiting for a writer, then refused).
    pub fn open_file(&self, name: &OsStr) -> Result<std::fs::File, Error> {
        let path = self.shown(name);
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::empty())
            .map_err(|e| not_followed(&path, e))?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| io(&path, e))?;
        if Meta::of(&stat).kind != Kind::File {
            return Err(not_followed(&path, Errno::LOOP));
        }
        // Reads block as on any regular file; the flag only kept the open from waiting.
        rustix::fs::fcntl_setfl(&fd, OFlags::empty()).map_err(|e| io(&path, e))?;
        Ok(std::fs::File::from(fd))
    }

    /// The target of symlink `name`.
    pub fn read_link(&self, name: &OsStr) -> Result<OsString, Error> {
        let target = rustix::fs::readlinkat(&self.fd, name, Vec::new())
            .map_err(|e| io(&self.shown(name), e))?;
        Ok(OsString::from_vec(target.into_bytes()))
    }

    /// Subdirectory `name`, made with `mode` (less the umask) unless it is there; anything else
    /// there is refused.
    pub fn make_dir(&self, name: &OsStr, mode: u32) -> Result<Dir, Error> {
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(mode as _)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(io(&self.shown(name), e)),
        }
        self.open_dir(name).map_err(|_| {
            Error::Invalid(format!(
                "{} exists and is not a directory: not restored over",
                self.shown(name).display()
            ))
        })
    }

    /// Removes what is at `name` unless it is a directory (which is refused).
    pub fn clear(&self, name: &OsStr) -> Result<(), Error> {
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(Errno::ISDIR) | Err(Errno::PERM) if self.is_dir(name) => {
                Err(Error::Invalid(format!(
                    "{} is a directory: a file is not restored over it",
                    self.shown(name).display()
                )))
            }
            Err(e) => Err(io(&self.shown(name), e)),
        }
    }

    /// Removes what is at `name`, a directory with everything in it (std's removal never
    /// follows a symlink).
    pub fn remove_all(&self, name: &OsStr) -> Result<(), Error> {
        if self.is_dir(name) {
            let path = self.shown(name);
            std::fs::remove_dir_all(&path).map_err(|e| Error::io(&path, e))
        } else {
            self.clear(name)
        }
    }

    fn is_dir(&self, name: &OsStr) -> bool {
        rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|s| FileType::from_raw_mode(s.st_mode as _) == FileType::Directory)
    }

    /// A new regular file `name` with `mode` (less the umask); nothing may be there.
    pub fn create_file(&self, name: &OsStr, mode: u32) -> Result<std::fs::File, Error> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(mode as _))
            .map_err(|e| io(&self.shown(name), e))?;
        Ok(std::fs::File::from(fd))
    }

    /// A new symlink `name` to `target`.
    pub fn symlink(&self, target: &OsStr, name: &OsStr) -> Result<(), Error> {
        rustix::fs::symlinkat(target.as_bytes(), &self.fd, name)
            .map_err(|e| io(&self.shown(name), e))
    }

    /// Owner (when `owner` is given) and time of symlink `name`, never of what it points to.
    pub fn set_link_meta(
        &self,
        name: &OsStr,
        owner: Option<(u32, u32)>,
        mtime: i128,
    ) -> Result<(), Error> {
        let shown = || self.shown(name);
        if let Some((uid, gid)) = owner {
            let (uid, gid) = (
                rustix::fs::Uid::from_raw(uid),
                rustix::fs::Gid::from_raw(gid),
            );
            rustix::fs::chownat(
                &self.fd,
                name,
                Some(uid),
                Some(gid),
                AtFlags::SYMLINK_NOFOLLOW,
            )
            .map_err(|e| io(&shown(), e))?;
        }
        let times = Timestamps {
            last_access: timespec(mtime),
            last_modification: timespec(mtime),
        };
        rustix::fs::utimensat(&self.fd, name, &times, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| io(&shown(), e))
    }

    /// This directory's owner, through its handle.
    pub fn set_owner(&self, owner: (u32, u32)) -> Result<(), Error> {
        set_owner(&self.fd, &self.path, owner)
    }

    /// This directory's owner, mode and time, through its handle.
    pub fn set_meta(&self, owner: Option<(u32, u32)>, mode: u32, mtime: i128) -> Result<(), Error> {
        set_meta(&self.fd, &self.path, owner, mode, mtime)
    }
}

/// Owner of the open file or directory `fd`, `path` naming it in errors.
pub fn set_owner(fd: impl AsFd, path: &Path, (uid, gid): (u32, u32)) -> Result<(), Error> {
    let (uid, gid) = (
        rustix::fs::Uid::from_raw(uid),
        rustix::fs::Gid::from_raw(gid),
    );
    rustix::fs::fchown(&fd, Some(uid), Some(gid)).map_err(|e| io(path, e))
}

/// Owner (when `owner` is given), mode (permission bits, setuid, setgid, sticky) and time of
/// the open file or directory `fd`, `path` naming it in errors.
pub fn set_meta(
    fd: impl AsFd,
    path: &Path,
    owner: Option<(u32, u32)>,
    mode: u32,
    mtime: i128,
) -> Result<(), Error> {
    if let Some(owner) = owner {
        set_owner(&fd, path, owner)?;
    }
    // After the owner: a change of owner clears setuid and setgid.
    rustix::fs::fchmod(&fd, Mode::from_raw_mode((mode & 0o7777) as _)).map_err(|e| io(path, e))?;
    let times = Timestamps {
        last_access: timespec(mtime),
        last_modification: timespec(mtime),
    };
    rustix::fs::futimens(&fd, &times).map_err(|e| io(path, e))
}
