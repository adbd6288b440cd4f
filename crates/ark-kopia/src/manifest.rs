//! Manifests (`repo/manifest`): labelled JSON records, kept in contents with prefix `m`, each a
//! gzip'd `{"entries":[{"id","labels","modified","deleted","data"}]}`. Snapshots are manifests.

use std::collections::{BTreeMap, HashMap};
use std::io::{Read as _, Write as _};

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::content::Contents;

/// The largest manifest content ark inflates: kopia compacts manifests into one content, which
/// for a million snapshots is far below this.
const MANIFEST_LIMIT: u64 = 256 << 20;

/// The owner Velero gives every repository's maintenance.
pub const VELERO_OWNER: &str = "default@default";

/// The maintenance parameters manifest (`type: maintenance`), as Velero writes it at creation.
pub fn velero_maintenance_params() -> serde_json::Value {
    const HOUR: i64 = 3600;
    serde_json::json!({
        "owner": VELERO_OWNER,
        "quick": { "enabled": true, "interval": HOUR * 1_000_000_000 },
        "full": { "enabled": true, "interval": 24 * HOUR * 1_000_000_000 },
        "logRetention": { "maxTotalSize": 1_073_741_824, "maxCount": 10_000, "maxAge": 720 * HOUR * 1_000_000_000 },
        "extendObjectLocks": false
    })
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ManifestEntry {
    pub id: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub labels: BTreeMap<String, String>,
    pub modified: jiff::Timestamp,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<serde_json::value::RawValue>>,
}

/// Go writes a nil map as `null`.
fn null_as_empty<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    Ok(Option::deserialize(d)?.unwrap_or_default())
}

#[derive(Serialize, Deserialize)]
struct ManifestContent {
    entries: Vec<ManifestEntry>,
}

/// One manifest content's entries: gzip'd JSON, inflated to at most `MANIFEST_LIMIT` bytes.
pub fn parse_content(gz: &[u8], what: &str) -> Result<Vec<ManifestEntry>, Error> {
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .take(MANIFEST_LIMIT + 1)
        .read_to_end(&mut json)
        .map_err(|e| Error::corrupt(what, e.to_string()))?;
    if json.len() as u64 > MANIFEST_LIMIT {
        return Err(Error::corrupt(what, "too large"));
    }
    let parsed: ManifestContent =
        serde_json::from_slice(&json).map_err(|e| Error::corrupt(what, e.to_string()))?;
    Ok(parsed.entries)
}

/// Reads every manifest content and merges them: the latest version of each ID, without the
/// deleted ones.
pub async fn load(contents: &Contents) -> Result<HashMap<String, ManifestEntry>, Error> {
    let mut merged: HashMap<String, ManifestEntry> = HashMap::new();
    for info in contents.list(Some(b'm')) {
        let gz = contents.read(&info.id).await?;
        for e in parse_content(&gz, &format!("manifest content {}", info.id))? {
            match merged.get(&e.id) {
                Some(old) if old.modified >= e.modified => {}
                _ => {
                    merged.insert(e.id.clone(), e);
                }
            }
        }
    }
    merged.retain(|_, e| !e.deleted);
    Ok(merged)
}

/// Writes `entries` as one manifest content (call `Contents::flush` to commit it).
pub async fn write(contents: &Contents, entries: Vec<ManifestEntry>) -> Result<(), Error> {
    let json = serde_json::to_vec(&ManifestContent { entries }).expect("JSON");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&json).expect("writing to memory");
    gz.write_all(b"\n").expect("writing to memory");
    let bytes = gz.finish().expect("writing to memory");
    contents.write(&bytes, Some(b'm')).await?;
    Ok(())
}

/// A new manifest entry with a random ID, as `manifest.Manager.Put` makes one.
pub fn new_entry(labels: BTreeMap<String, String>, data: &impl Serialize) -> ManifestEntry {
    let mut id = [0u8; 16];
    crate::random(&mut id);
    ManifestEntry {
        id: hex::encode(id),
        labels,
        modified: jiff::Timestamp::now(),
        deleted: false,
        data: Some(serde_json::value::to_raw_value(data).expect("JSON")),
    }
}

/// The entry that deletes manifest `id`.
pub fn deletion(id: &str) -> ManifestEntry {
    ManifestEntry {
        id: id.into(),
        labels: BTreeMap::new(),
        modified: jiff::Timestamp::now(),
        deleted: true,
        data: None,
    }
}
