//! Warnings and errors of a backup or restore, in Velero's results format:
//! `{"errors": {"velero": [...], "cluster": [...], "namespaces": {"ns": [...]}}, "warnings": {...}}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Messages listed per Result (the errors, or the warnings, of one operation): a hostile tarball
/// may hold a million bad entries, and its results must stay readable. The rest are counted.
pub const MAX_LISTED: usize = 1000;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Result {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub velero: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub namespaces: BTreeMap<String, Vec<String>>,
    /// Messages past `MAX_LISTED`, counted but not listed (a field Velero's readers ignore).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Result {
    fn listed(&self) -> usize {
        self.velero.len()
            + self.cluster.len()
            + self.namespaces.values().map(Vec::len).sum::<usize>()
    }

    /// Whether another message may be listed; if not, it is counted.
    fn room(&mut self) -> bool {
        let room = self.listed() < MAX_LISTED;
        if !room {
            self.omitted += 1;
        }
        room
    }

    /// A message about the operation as a whole (Velero's `velero` list).
    pub fn add_general(&mut self, message: String) {
        if self.room() {
            self.velero.push(message);
        }
    }

    pub fn add(&mut self, namespace: Option<&str>, message: String) {
        if !self.room() {
            return;
        }
        match namespace {
            Some(ns) => self
                .namespaces
                .entry(ns.to_string())
                .or_default()
                .push(message),
            None => self.cluster.push(message),
        }
    }

    pub fn count(&self) -> i64 {
        self.listed() as i64 + self.omitted as i64
    }

    /// Every message, as a reader sees them: the general ones, the cluster's, then each
    /// namespace's prefixed with it, and how many more there were.
    pub fn messages(&self) -> Vec<String> {
        let namespaced = self.namespaces.iter().flat_map(|(namespace, messages)| {
            messages.iter().map(move |m| format!("{namespace}: {m}"))
        });
        let mut all: Vec<String> = (self.velero.iter().chain(&self.cluster).cloned())
            .chain(namespaced)
            .collect();
        if self.omitted > 0 {
            all.push(format!("... and {} more", self.omitted));
        }
        all
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    #[serde(default)]
    pub errors: Result,
    #[serde(default)]
    pub warnings: Result,
}

/// gzip of the JSON, as uploaded.
pub fn gzip_json<T: Serialize>(value: &T) -> std::io::Result<bytes::Bytes> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    serde_json::to_writer(&mut encoder, value)?;
    encoder.flush()?;
    Ok(encoder.finish()?.into())
}

/// gzip of the JSON of `values`, or nothing when there are none: the file is left out of the
/// bucket, as Velero leaves it out.
pub fn gzip_json_unless_empty<T: Serialize>(values: &[T]) -> std::io::Result<Option<bytes::Bytes>> {
    (!values.is_empty()).then(|| gzip_json(&values)).transpose()
}

/// A list a backup uploads (its snapshots, its pod volume backups) unpacks to a few MiB at most;
/// more is refused, not held (and no more is read of the packed file either).
pub const MAX_LIST_BYTES: u64 = 64 << 20;

/// The JSON in a gzip'd file of the bucket, `what` naming it in errors; refused past
/// [`MAX_LIST_BYTES`].
pub fn gunzip_json<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    what: &str,
) -> std::result::Result<T, String> {
    use std::io::Read as _;
    let mut unpacked = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .take(MAX_LIST_BYTES + 1)
        .read_to_end(&mut unpacked)
        .map_err(|e| format!("{what}: {e}"))?;
    if unpacked.len() as u64 > MAX_LIST_BYTES {
        return Err(format!(
            "{what}: unpacks to more than {MAX_LIST_BYTES} bytes"
        ));
    }
    serde_json::from_slice(&unpacked).map_err(|e| format!("{what}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_limit_messages_are_counted_not_listed() {
        let mut result = Result::default();
        for i in 0..MAX_LISTED + 5 {
            result.add(Some("a"), format!("error {i}"));
        }
        result.add_general("one more".into());
        assert_eq!(result.count(), MAX_LISTED as i64 + 6);
        assert_eq!(result.omitted, 6);
        assert_eq!(result.namespaces["a"].len(), MAX_LISTED);
        let json = serde_json::to_value(&result).unwrap();
        assert_eq!(json["omitted"], 6);
    }

    #[test]
    fn results_serialize_like_velero() {
        let mut results = Results::default();
        results
            .warnings
            .add(Some("shop"), "namespace shop not found".into());
        results.errors.velero.push("boom".into());
        assert_eq!(results.warnings.count(), 1);
        assert_eq!(
            serde_json::to_string(&results).unwrap(),
            r#"{"errors":{"velero":["boom"]},"warnings":{"namespaces":{"shop":["namespace shop not found"]}}}"#
        );
    }
}
