//! A restored pod's hooks: its init hooks become init containers before its own (and Velero's
//! `restore-wait` helpers go, see [`hooks::set_init_containers`]); its exec hooks are handed to the
//! restore, which runs them once everything is restored.

use serde_json::Value;

use super::{ItemCx, Output, RestoreCx, RestoreItemAction};
use crate::hooks;

pub struct InitHooksAction;

impl RestoreItemAction for InitHooksAction {
    fn applies_to(&self, group_resource: &str) -> bool {
        group_resource == "pods"
    }

    fn execute(&self, item: &mut Value, restore: &RestoreCx<'_>, _: &ItemCx<'_>, out: &mut Output) {
        // The pod as it will be created: its namespace already mapped, as the hooks' namespace
        // filters name the restored namespace in Velero.
        let pod_hooks = hooks::for_pod(restore.spec.hooks.as_ref(), item);
        hooks::set_init_containers(item, &pod_hooks.init);
        out.pod_hooks = pod_hooks;
    }
}
