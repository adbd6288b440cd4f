//! Fuzz targets for what ark-api reads from others (the runner: crates/ark-fuzz; the seeds:
//! fuzz/corpus/<target>/). Each must return, never panic, and keep its promises on any input.

use ark_api::Backup;

fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

#[test]
fn hooks_file() {
    ark_fuzz::run("hooks-file", |bytes| {
        let _ = ark_api::hooks::parse_file(&text(bytes));
    });
}

#[test]
fn duration() {
    ark_fuzz::run("duration", |bytes| {
        if let Ok(parsed) = ark_api::duration::parse(&text(bytes)) {
            // What is parsed prints as a duration that parses back to itself.
            let shown = ark_api::duration::format(parsed);
            assert_eq!(
                ark_api::duration::parse(&shown).ok(),
                Some(parsed),
                "{shown}"
            );
        }
    });
}

#[test]
fn label_selector() {
    ark_fuzz::run("label-selector", |bytes| {
        let _ = ark_api::selector::parse(&text(bytes));
    });
}

#[test]
fn label_value() {
    ark_fuzz::run("label-value", |bytes| {
        let value = ark_api::labels::valid_label_value(&text(bytes));
        assert!(
            value.len() <= 63,
            "{value:?} is longer than a label value may be"
        );
    });
}

/// `velero-backup.json` as sync reads it from a bucket.
#[test]
fn backup_metadata() {
    ark_fuzz::run("backup-metadata", |bytes| {
        let _ = serde_json::from_slice::<Backup>(bytes);
    });
}
