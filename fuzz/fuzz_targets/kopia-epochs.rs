#![no_main]

// A repository's epoch blob names as a listing returns them (one per line; a bucket is written by
// others): resolving them ends at once, and the index it names holds only blobs that were listed.
use ark_kopia::blobs::BlobMeta;
use ark_kopia::epoch::{EpochListing, EpochState};

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    let text = String::from_utf8_lossy(bytes);
    let mut listing = EpochListing::default();
    let mut listed = std::collections::HashSet::new();
    for (i, id) in text.lines().enumerate() {
        let kind = match id.get(..2) {
            Some("xe") => &mut listing.markers,
            Some("xw") => &mut listing.watermarks,
            Some("xs") => &mut listing.singles,
            Some("xr") => &mut listing.ranges,
            Some("xn") => &mut listing.uncompacted,
            _ => continue,
        };
        listed.insert(id.to_string());
        kind.push(BlobMeta {
            id: id.to_string(),
            length: i as u64,
            modified: jiff::Timestamp::UNIX_EPOCH,
        });
    }
    let state = EpochState::resolve(listing);
    for blob in state.index_blobs.iter().chain(&state.write_epoch_blobs) {
        assert!(listed.contains(&blob.id), "{} was not listed", blob.id);
    }
});
