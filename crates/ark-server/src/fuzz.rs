//! Fuzz targets for what the server reads from a bucket or a pod: each a function of bytes that
//! must return, never panic, whatever the bytes. cargo-fuzz runs them (`fuzz/fuzz_targets/`, seeds
//! in `fuzz/corpus/<target>/`, `scripts/fuzz.sh`).

use crate::controllers::restore::extract;
use crate::domain::snapshots;
use crate::hooks::annotations;
use crate::records::results;

/// The fuzzer's bytes gzipped, as a bucket holds them: the fuzzer mutates what is inside.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// A backup tarball (its tar layer mutated, then gzipped as a bucket holds it): unpacked within
/// small limits, and read for VolumeSnapshotContents.
pub fn tarball(tar: &[u8]) {
    let scratch = tempfile::tempdir().unwrap();
    let gz = gzip(tar);
    let mut file = tempfile::tempfile_in(scratch.path()).unwrap();
    std::io::Write::write_all(&mut file, &gz).unwrap();
    std::io::Seek::rewind(&mut file).unwrap();
    let limits = extract::Limits {
        max_entry_bytes: 1 << 16,
        max_total_bytes: 1 << 20,
        max_entries: 1000,
    };
    if let Ok(extracted) = extract::extract(file, scratch.path(), limits) {
        assert!(extracted.rejected.count() >= 0);
    }
    let _ = snapshots::snapshots_in_tarball(gz.as_slice());
}

/// A backup's resource policy document, as a person writes it in a ConfigMap: read (or refused
/// with its reasons), then matched against a volume, never a panic (a capacity past any number,
/// a document nested deep).
pub fn resource_policies(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    if let Ok(policies) = crate::domain::volume_policy::ResourcePolicies::read(&text) {
        let _ = policies.action(&Default::default());
    }
}

/// A pod's hook annotations.
pub fn hook_annotations(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let _ = annotations::command(&text);
    if let Ok(pod) = serde_json::from_slice::<serde_json::Value>(bytes) {
        let _ = annotations::hooks(&pod);
    }
}

/// The snapshot lists beside a backup, as deletion reads them.
pub fn snapshot_lists(bytes: &[u8]) {
    let gz = gzip(bytes);
    let _ = snapshots::parse_recorded(Some(&gz), Some(&gz));
    let _ = snapshots::tarball_may_hold_snapshots(Some(&gz));
}

/// A backup's or restore's results.
pub fn results(bytes: &[u8]) {
    let _ = serde_json::from_slice::<results::Results>(bytes);
}
