//! The kopia CLI, v0.16.0 (the version Velero v1.18 links), as the oracle of ark's kopia format:
//! built once by `scripts/kopia-build.sh` into a cache outside the repository, and run against
//! the same SeaweedFS bucket as ark.
//!
//! A test that finds no kopia build fails and says how to make one: it never skips itself.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::Cluster;

/// The kopia binary: `$ARK_KOPIA_BIN/kopia`, or where `scripts/kopia-build.sh` puts it.
pub fn binary() -> PathBuf {
    let dir = match std::env::var_os("ARK_KOPIA_BIN") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let output = Command::new("bash")
                .arg(crate::checkout().join("scripts/kopia-build.sh"))
                .arg("--print-dir")
                .output()
                .expect("run scripts/kopia-build.sh --print-dir");
            PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
        }
    };
    let kopia = dir.join("kopia");
    assert!(
        kopia.is_file(),
        "kopia is not built ({}): run `bash scripts/kopia-build.sh` (the README's setup and test \
         commands do)",
        kopia.display()
    );
    kopia
}

/// One kopia client, connected as Velero's uploader is (`default@default`), with its own config
/// and cache in a temporary directory.
pub struct Kopia {
    home: tempfile::TempDir,
    password: String,
}

impl Kopia {
    pub fn new(password: &str) -> Kopia {
        Kopia {
            home: tempfile::tempdir().expect("a temporary directory"),
            password: password.into(),
        }
    }

    /// The S3 flags that reach `prefix` in the cluster's bucket (kopia appends blob IDs to it).
    pub fn s3_flags(cluster: &Cluster, prefix: &str) -> Vec<String> {
        vec![
            "s3".into(),
            format!("--bucket={}", cluster.s3_bucket),
            format!("--prefix={}/", prefix.trim_end_matches('/')),
            format!("--endpoint={}", cluster.s3_address()),
            "--disable-tls".into(),
            format!("--access-key={}", cluster.s3_access_key),
            format!("--secret-access-key={}", cluster.s3_secret_key),
            "--region=us-east-1".into(),
        ]
    }

    /// The client's config file (`--config-file`).
    pub fn config_file(&self) -> PathBuf {
        self.home.path().join("repository.config")
    }

    /// The environment every kopia command of this client runs with: its password, and its
    /// caches and logs in its own directory.
    pub fn environment(&self) -> Vec<(&'static str, std::ffi::OsString)> {
        let home = self.home.path();
        vec![
            ("KOPIA_PASSWORD", self.password.clone().into()),
            ("KOPIA_CHECK_FOR_UPDATES", "false".into()),
            ("KOPIA_CACHE_DIRECTORY", home.join("cache").into()),
            ("KOPIA_LOG_DIR", home.join("logs").into()),
            ("HOME", home.into()),
        ]
    }

    pub fn run(&self, args: &[&str]) -> Output {
        let mut command = Command::new(binary());
        command
            .arg(format!("--config-file={}", self.config_file().display()))
            .args(args)
            .envs(self.environment())
            .stdin(std::process::Stdio::null());
        crate::output_within(&mut command, crate::COMMAND_LIMIT)
    }

    /// Runs kopia and insists that it succeeds; its stdout comes back.
    pub fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "kopia {args:?} failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn repository(&self, verb: &str, cluster: &Cluster, prefix: &str, user: &str, host: &str) {
        let flags = Self::s3_flags(cluster, prefix);
        let mut args = vec!["repository", verb];
        args.extend(flags.iter().map(String::as_str));
        let (user, host) = (
            format!("--override-username={user}"),
            format!("--override-hostname={host}"),
        );
        args.extend([user.as_str(), host.as_str()]);
        self.ok(&args);
    }

    /// `kopia repository create s3 …` at `prefix`, as Velero's `default@default`.
    pub fn create(&self, cluster: &Cluster, prefix: &str) {
        self.repository("create", cluster, prefix, "default", "default");
    }

    /// `kopia repository create s3 …` as `user@host`, who then owns its maintenance.
    pub fn create_as(&self, cluster: &Cluster, prefix: &str, user: &str, host: &str) {
        self.repository("create", cluster, prefix, user, host);
    }

    /// `kopia repository create filesystem --path DIR`, as `default@default`.
    pub fn create_filesystem(&self, dir: &Path) {
        let path = format!("--path={}", dir.display());
        self.ok(&[
            "repository",
            "create",
            "filesystem",
            &path,
            "--override-username=default",
            "--override-hostname=default",
        ]);
    }

    /// `kopia repository connect s3 …` to the repository at `prefix`, as `default@default`.
    pub fn connect(&self, cluster: &Cluster, prefix: &str) {
        self.repository("connect", cluster, prefix, "default", "default");
    }

    /// `kopia snapshot create DIR --json`: the snapshot's manifest, as kopia prints it.
    pub fn snapshot(&self, dir: &Path) -> serde_json::Value {
        let out = self.ok(&["snapshot", "create", &dir.display().to_string(), "--json"]);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("kopia's snapshot JSON: {e}\n{out}"))
    }

    /// `kopia snapshot list --all --json`.
    pub fn snapshots(&self) -> Vec<serde_json::Value> {
        let out = self.ok(&["snapshot", "list", "--all", "--json"]);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("kopia's list JSON: {e}\n{out}"))
    }
}

/// The object store and repository root of a kopia repository at `prefix` in the cluster's bucket.
pub fn repository_store(
    cluster: &Cluster,
    prefix: &str,
) -> (
    std::sync::Arc<dyn ark_storage::ObjectStore>,
    ark_storage::Path,
) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let store = ark_storage::open(&cluster.s3_location(prefix)).expect("the S3 location opens");
    (store.object_store(), ark_storage::Path::from(prefix))
}

/// The blob IDs under the repository, by first letter.
pub async fn blob_counts(
    store: &std::sync::Arc<dyn ark_storage::ObjectStore>,
    root: &ark_storage::Path,
) -> std::collections::BTreeMap<char, (usize, u64)> {
    use futures::TryStreamExt as _;
    let all: Vec<_> = store.list(Some(root)).try_collect().await.unwrap();
    let mut counts = std::collections::BTreeMap::new();
    for meta in all {
        let name = meta.location.filename().unwrap().to_string();
        let e = counts.entry(name.chars().next().unwrap()).or_insert((0, 0));
        e.0 += 1;
        e.1 += meta.size;
    }
    counts
}

/// A small model of a pod volume, as the oracle tests compare them: many small files in nested
/// directories, large random files that split into several chunks, empty files and directories,
/// symlinks (relative, absolute, dangling), odd names, modes and times to the nanosecond, and a
/// sparse file. `variant` changes a few bytes of some files, as a volume changes between backups.
pub fn write_volume_tree(root: &Path, variant: u8) {
    write_volume_tree_scaled(root, variant, 1);
}

/// How much larger the oracle tests' trees are: `ARK_KOPIA_SCALE` (default 1), the long mode.
pub fn oracle_scale() -> usize {
    std::env::var("ARK_KOPIA_SCALE").map_or(1, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("ARK_KOPIA_SCALE={v:?} is not a number"))
    })
}

/// [`write_volume_tree`] with `scale` times the directories of small files and the large files'
/// sizes.
pub fn write_volume_tree_scaled(root: &Path, variant: u8, scale: usize) {
    use std::os::unix::fs::PermissionsExt as _;
    let random = |seed: u64, n: usize| -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    };
    std::fs::create_dir_all(root).unwrap();
    for d in 0..6 * scale {
        let dir = root.join(format!("src/dir-{d}/sub"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..40 {
            let mut text = format!("/* file {d}/{f} */\n").repeat(20 + f).into_bytes();
            if f % 13 == 0 && variant > 0 {
                text.extend_from_slice(format!("changed in variant {variant}\n").as_bytes());
            }
            std::fs::write(dir.join(format!("file-{f}.c")), text).unwrap();
        }
    }
    // Large files: several chunks each, so indirect objects; the first stays the same across
    // variants and the second changes in one place.
    let large = random(0x2545_f491_4f6c_dd1d, scale * (12 << 20));
    std::fs::write(root.join("large-same.bin"), &large).unwrap();
    let mut changed = random(0x9e37_79b9_7f4a_7c15, scale * (5 << 20));
    if variant > 0 {
        changed[3 << 20] ^= variant;
    }
    std::fs::write(root.join("large-changed.bin"), &changed).unwrap();
    std::fs::write(root.join("empty"), b"").unwrap();
    std::fs::create_dir_all(root.join("empty-dir")).unwrap();
    std::fs::write(root.join("name with spaces"), b"spaces").unwrap();
    std::fs::write(root.join("newline\nin name"), b"newline").unwrap();
    std::fs::write(root.join("ünïcødé-名前"), b"unicode").unwrap();
    for (target, link) in [
        ("src/dir-0", "link-relative"),
        ("/etc/hostname", "link-absolute"),
        ("does/not/exist", "link-dangling"),
    ] {
        let _ = std::fs::remove_file(root.join(link));
        std::os::unix::fs::symlink(target, root.join(link)).unwrap();
    }
    let exec = root.join("run.sh");
    std::fs::write(&exec, b"#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&exec, std::fs::Permissions::from_mode(0o755)).unwrap();
    let secret = root.join("secret");
    std::fs::write(&secret, b"secret").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let sparse = std::fs::File::create(root.join("sparse")).unwrap();
    sparse.set_len(9 << 20).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&sparse, b"the end", (9 << 20) - 7).unwrap();
    drop(sparse);
    // Times to the nanosecond, directories last (writing into one changes its time).
    let mut paths: Vec<PathBuf> = Vec::new();
    collect(root, &mut paths);
    paths.sort();
    paths.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for (i, p) in paths.iter().enumerate() {
        // A file whose bytes change gets a new time, as a writer gives it.
        let name = p.file_name().unwrap().to_string_lossy();
        let changed = [
            "file-0.c",
            "file-13.c",
            "file-26.c",
            "file-39.c",
            "large-changed.bin",
        ]
        .contains(&name.as_ref());
        let shift = if changed { i64::from(variant) } else { 0 };
        let t = filetime::FileTime::from_unix_time(
            1_700_000_000 + i as i64 * 61 + shift,
            123_456_789 + i as u32,
        );
        filetime::set_symlink_file_times(p, t, t).unwrap();
    }
    let t = filetime::FileTime::from_unix_time(1_690_000_000, 987_654_321);
    filetime::set_file_times(root, t, t).unwrap();
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if std::fs::symlink_metadata(&p).unwrap().is_dir() {
            collect(&p, out);
        }
        out.push(p);
    }
}

/// Who restored a tree: kopia's restore keeps less than ark's.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RestoredBy {
    /// Every time to the nanosecond.
    Ark,
    /// kopia gives a subdirectory the newest time found inside it (`repofs.go` reads a
    /// directory's time from its summary) and sets symlinks' times in microseconds, rounded up.
    Kopia,
}

/// Fails, naming only the entries that differ, unless the two trees are the same.
pub fn assert_same_tree(restored: &Path, original: &Path, by: RestoredBy) {
    let (a, b) = (tree_listing(restored, by), tree_listing(original, by));
    let mut differences = Vec::new();
    for key in a
        .keys()
        .chain(b.keys())
        .collect::<std::collections::BTreeSet<_>>()
    {
        if a.get(key) != b.get(key) {
            differences.push(format!(
                "{key:?}:\n  restored: {:?}\n  original: {:?}",
                a.get(key),
                b.get(key)
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} entries differ:\n{}",
        differences.len(),
        b.len(),
        differences
            .iter()
            .take(12)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// How many regular files are below `root`.
pub fn tree_files(root: &Path) -> u64 {
    let mut paths = Vec::new();
    collect(root, &mut paths);
    paths
        .iter()
        .filter(|p| std::fs::symlink_metadata(p).unwrap().is_file())
        .count() as u64
}

/// Every entry below `root` as the oracle tests compare trees: relative path → kind, mode, size,
/// modification time (ns), owner and a digest of the contents (or the link's target).
pub fn tree_listing(root: &Path, by: RestoredBy) -> std::collections::BTreeMap<String, String> {
    use std::hash::{Hash as _, Hasher as _};
    use std::os::unix::fs::MetadataExt as _;
    let mut paths = Vec::new();
    collect(root, &mut paths);
    paths
        .into_iter()
        .map(|p| {
            let md = std::fs::symlink_metadata(&p).unwrap();
            let what = if md.file_type().is_symlink() {
                format!("link -> {}", std::fs::read_link(&p).unwrap().display())
            } else if md.is_dir() {
                "dir".to_string()
            } else {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::fs::read(&p).unwrap().hash(&mut h);
                format!("file {:016x}", h.finish())
            };
            let mode = if md.file_type().is_symlink() {
                0
            } else {
                md.mode() & 0o7777
            };
            let size = if md.is_file() { md.size() } else { 0 };
            let nanos = i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec());
            let mtime = match by {
                RestoredBy::Kopia if md.is_dir() => "(kopia's)".to_string(),
                RestoredBy::Kopia if md.file_type().is_symlink() => {
                    format!("{}us", (nanos + 999) / 1000)
                }
                _ => nanos.to_string(),
            };
            let line = format!(
                "{what} mode {mode:o} size {size} mtime {mtime} owner {}:{}",
                md.uid(),
                md.gid()
            );
            (p.strip_prefix(root).unwrap().display().to_string(), line)
        })
        .collect()
}

/// The bytes of every file and symlink target below `root`: what reading a snapshot of it reads.
pub fn tree_bytes(root: &Path) -> u64 {
    let mut paths = Vec::new();
    collect(root, &mut paths);
    paths
        .iter()
        .map(|p| {
            let md = std::fs::symlink_metadata(p).unwrap();
            if md.file_type().is_symlink() {
                std::fs::read_link(p).unwrap().as_os_str().len() as u64
            } else if md.is_file() {
                md.len()
            } else {
                0
            }
        })
        .sum()
}
