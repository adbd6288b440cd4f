//! Cluster IPs and node ports belong to the cluster that assigned them (Velero's service restore
//! action); node ports stay when the restore's `preserveNodePorts` asks for them, and a port taken
//! in this cluster then fails that Service, as in Velero.

use serde_json::Value;

use super::{ItemCx, Output, RestoreCx, RestoreItemAction, spec_mut};

pub struct ServiceAction;

impl RestoreItemAction for ServiceAction {
    fn applies_to(&self, group_resource: &str) -> bool {
        group_resource == "services"
    }

    fn execute(&self, item: &mut Value, restore: &RestoreCx<'_>, _: &ItemCx<'_>, _: &mut Output) {
        let Some(spec) = spec_mut(item) else {
            return;
        };
        let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
        if !headless {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        if restore.spec.preserve_node_ports == Some(true) {
            return;
        }
        spec.remove("healthCheckNodePort");
        if let Some(Value::Array(ports)) = spec.get_mut("ports") {
            for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                port.remove("nodePort");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing;
    use serde_json::json;

    #[test]
    fn services_lose_cluster_ips_unless_headless_and_node_ports_unless_preserved() {
        let node_port = json!({ "metadata": {}, "spec": {
            "clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"], "ports": [{ "port": 80, "nodePort": 30001 }] } });
        let (svc, _) = testing::run("services", node_port.clone(), &[], &[], testing::spec());
        assert_eq!(svc["spec"], json!({ "ports": [{ "port": 80 }] }));
        let preserving = ark_api::RestoreSpec {
            preserve_node_ports: Some(true),
            ..Default::default()
        };
        let (svc, _) = testing::run("services", node_port, &[], &[], &preserving);
        assert_eq!(
            svc["spec"],
            json!({ "ports": [{ "port": 80, "nodePort": 30001 }] })
        );
        let (headless, _) = testing::run(
            "services",
            json!({ "metadata": {}, "spec": { "clusterIP": "None" } }),
            &[],
            &[],
            testing::spec(),
        );
        assert_eq!(headless["spec"]["clusterIP"], "None");
    }
}
