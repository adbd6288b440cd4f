//! Resource lists, written as the items go by.

use std::io::Write;
use std::path::Path;

use kube::api::ApiResource;

use crate::records::archive::{Gz, gz_file};

/// A resource's key in a resource list: `v1/ConfigMap`, `apps/v1/Deployment`.
pub fn key(resource: &ApiResource) -> String {
    format!("{}/{}", resource.api_version, resource.kind)
}

/// A resource list (`<backup>-resource-list.json.gz`, `restore-<r>-resource-list.json.gz`):
/// `{"apps/v1/Deployment": ["ns/name", ...], ...}`, written as a stream because most resources'
/// items arrive together; the few that may also arrive later (items a backup item action adds)
/// are held until the end.
pub struct ResourceListWriter {
    file: std::fs::File,
    out: Gz,
    current: Option<String>,
    first_key: bool,
    first_item: bool,
    deferred: std::collections::BTreeMap<String, Vec<String>>,
}

impl ResourceListWriter {
    pub fn create(scratch: &Path) -> std::io::Result<Self> {
        let (file, mut out) = gz_file(scratch)?;
        out.write_all(b"{")?;
        Ok(Self {
            file,
            out,
            current: None,
            first_key: true,
            first_item: true,
            deferred: Default::default(),
        })
    }

    /// Records `entry` under `key`, whose entries may arrive at any time; such a key must never be
    /// given to [`Self::add`].
    pub fn add_deferred(&mut self, key: &str, entry: &str) {
        self.deferred
            .entry(key.to_string())
            .or_default()
            .push(entry.to_string());
    }

    /// Records `entry` (`ns/name` or `name`) under `key`; keys must arrive grouped.
    pub fn add(&mut self, key: &str, entry: &str) -> std::io::Result<()> {
        if self.current.as_deref() != Some(key) {
            if self.current.is_some() {
                self.out.write_all(b"]")?;
            }
            if !self.first_key {
                self.out.write_all(b",")?;
            }
            self.first_key = false;
            serde_json::to_writer(&mut self.out, key)?;
            self.out.write_all(b":[")?;
            self.current = Some(key.to_string());
            self.first_item = true;
        }
        if !self.first_item {
            self.out.write_all(b",")?;
        }
        self.first_item = false;
        serde_json::to_writer(&mut self.out, entry)?;
        Ok(())
    }

    pub fn finish(mut self) -> std::io::Result<std::fs::File> {
        for (key, entries) in std::mem::take(&mut self.deferred) {
            for entry in entries {
                self.add(&key, &entry)?;
            }
        }
        if self.current.is_some() {
            self.out.write_all(b"]")?;
        }
        self.out.write_all(b"}")?;
        self.out.finish()?.flush()?;
        Ok(self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::archive::gunzip;

    #[test]
    fn resource_list_is_valid_json_grouped_by_kind() {
        let dir = tempfile::tempdir().unwrap();
        let mut list = ResourceListWriter::create(dir.path()).unwrap();
        list.add_deferred("v1/PersistentVolume", "pv-b");
        list.add("v1/ConfigMap", "shop/a").unwrap();
        list.add("v1/ConfigMap", "shop/b").unwrap();
        list.add_deferred("v1/PersistentVolume", "pv-a");
        list.add("v1/Namespace", "shop").unwrap();
        let file = list.finish().unwrap();
        let value: serde_json::Value = serde_json::from_slice(&gunzip(file)).unwrap();
        assert_eq!(
            value,
            serde_json::json!({ "v1/ConfigMap": ["shop/a", "shop/b"], "v1/Namespace": ["shop"],
                                "v1/PersistentVolume": ["pv-b", "pv-a"] })
        );
        let empty = ResourceListWriter::create(dir.path())
            .unwrap()
            .finish()
            .unwrap();
        assert_eq!(gunzip(empty), b"{}");
    }
}
