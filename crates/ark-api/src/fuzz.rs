//! Fuzz targets for what ark-api reads from others: each a function of bytes that must return,
//! never panic, and keep its promises on any input. cargo-fuzz runs them (`fuzz/fuzz_targets/`,
//! seeds in `fuzz/corpus/<target>/`, `scripts/fuzz.sh`).

use crate::Backup;

fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// A restore's hooks file.
pub fn hooks_file(bytes: &[u8]) {
    let _ = crate::hooks::parse_file(&text(bytes));
}

/// A duration: what is parsed prints as a duration that parses back to itself.
pub fn duration(bytes: &[u8]) {
    if let Ok(parsed) = crate::duration::parse(&text(bytes)) {
        let shown = crate::duration::format(parsed);
        assert_eq!(crate::duration::parse(&shown).ok(), Some(parsed), "{shown}");
    }
}

/// A label selector.
pub fn label_selector(bytes: &[u8]) {
    let _ = crate::selector::parse(&text(bytes));
}

/// A name made a label value: never longer than a label value may be.
pub fn label_value(bytes: &[u8]) {
    let value = crate::labels::valid_label_value(&text(bytes));
    assert!(
        value.len() <= 63,
        "{value:?} is longer than a label value may be"
    );
}

/// `velero-backup.json` as sync reads it from a bucket.
pub fn backup_metadata(bytes: &[u8]) {
    let _ = serde_json::from_slice::<Backup>(bytes);
}
