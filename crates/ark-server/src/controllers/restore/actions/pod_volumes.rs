//! A restored pod whose volumes' data the backup holds starts with `restore-wait`, before the
//! restore hooks' init containers and its own (Velero's pod volume restore action): the volumes it
//! waits for get their data from the node agent once the pod is created.

use serde_json::Value;

use super::super::pod_volumes::restore_wait;
use super::{ItemCx, Output, RestoreCx, RestoreItemAction, spec_mut};

pub struct PodVolumesAction;

impl RestoreItemAction for PodVolumesAction {
    fn applies_to(&self, group_resource: &str) -> bool {
        group_resource == "pods"
    }

    fn execute(
        &self,
        item: &mut Value,
        restore: &RestoreCx<'_>,
        cx: &ItemCx<'_>,
        out: &mut Output,
    ) {
        let Some(data) = restore.volume_data else {
            return;
        };
        let name = item
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let source_namespace = cx.source_namespace.unwrap_or_default();
        let has_volume = |volume: &str| {
            item.pointer("/spec/volumes")
                .and_then(Value::as_array)
                .is_some_and(|v| v.iter().any(|v| v["name"] == volume))
        };
        let backups: Vec<_> = data
            .backed_up
            .of_pod(source_namespace, &name)
            .iter()
            .filter(|pvb| has_volume(&pvb.spec.volume))
            .cloned()
            .collect();
        if backups.is_empty() {
            return;
        }
        let volumes: Vec<String> = backups.iter().map(|b| b.spec.volume.clone()).collect();
        let Some(image) = data.helper_image else {
            out.errors.push(format!(
                "pod {source_namespace}/{name}: the data of its volumes {} is not restored: the \
                 server has no restore helper image (ark server --restore-helper-image)",
                volumes.join(", ")
            ));
            return;
        };
        let helper = restore_wait(image, data.restore_uid, &volumes, item);
        let Some(spec) = spec_mut(item) else {
            return;
        };
        let mut init = match spec.remove("initContainers") {
            Some(Value::Array(init)) => init,
            _ => Vec::new(),
        };
        init.insert(0, helper);
        spec.insert("initContainers".into(), Value::Array(init));
        out.volume_data = backups;
    }
}
