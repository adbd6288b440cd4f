//! A job's selector and controller-uid labels name the old job's uid (Velero's job restore action):
//! the API server sets them anew.

use serde_json::Value;

use super::{ItemCx, Output, RestoreCx, RestoreItemAction, spec_mut};

pub struct JobAction;

impl RestoreItemAction for JobAction {
    fn applies_to(&self, group_resource: &str) -> bool {
        group_resource == "jobs.batch"
    }

    fn execute(&self, item: &mut Value, _: &RestoreCx<'_>, _: &ItemCx<'_>, _: &mut Output) {
        let Some(spec) = spec_mut(item) else {
            return;
        };
        spec.remove("selector");
        if let Some(Value::Object(template_labels)) = spec
            .get_mut("template")
            .and_then(|t| t.pointer_mut("/metadata/labels"))
        {
            for label in [
                "controller-uid",
                "batch.kubernetes.io/controller-uid",
                "job-name",
                "batch.kubernetes.io/job-name",
            ] {
                template_labels.remove(label);
            }
        }
    }
}
