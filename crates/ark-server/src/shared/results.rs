//! Warnings and errors of a backup or restore, in Velero's results format:
//! `{"errors": {"velero": [...], "cluster": [...], "namespaces": {"ns": [...]}}, "warnings": {...}}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Result {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub velero: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub namespaces: BTreeMap<String, Vec<String>>,
}

impl Result {
    pub fn add(&mut self, namespace: Option<&str>, message: String) {
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
        (self.velero.len()
            + self.cluster.len()
            + self.namespaces.values().map(Vec::len).sum::<usize>()) as i64
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

#[cfg(test)]
mod tests {
    use super::*;

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
