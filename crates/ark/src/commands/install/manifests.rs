//! What `ark install` puts in a cluster, decided from its arguments alone: a pure function, so
//! that `--dry-run` prints exactly what a real run applies.

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::ApiResource;
use serde_json::{Value, json};

use super::{CREDENTIALS_SECRET, roles};
use crate::cli::args::{Feature, VerifyNewBackups};
use clap::ValueEnum as _;

/// The field manager of every object ark installs: `ark uninstall` removes what only it manages.
pub const FIELD_MANAGER: &str = "ark-install";
/// The Deployment's (and the server's ServiceAccount's) name.
pub const SERVER: &str = "ark";
/// The key of the credentials in CREDENTIALS_SECRET (Velero's).
pub const CREDENTIALS_KEY: &str = "cloud";
/// Where the Deployment serves metrics and its health endpoints (Velero's metrics port).
pub const METRICS_PORT: u16 = 8085;
/// Where the image puts the binary (see the Dockerfile).
pub const BINARY: &str = "/ark";
/// The node agent's DaemonSet, ServiceAccount and Role: Velero's name, and the label Velero's
/// server (and ark's) finds an agent on a node by.
pub const NODE_AGENT: &str = ark_server::node_agent::DAEMON_SET;
/// Where the agent sees the kubelet's pod directory (Velero's mount point).
pub const HOST_PODS: &str = "/host_pods";
/// The kubelet's pod directory on a node, unless `--kubelet-pods-dir` says otherwise.
pub const KUBELET_PODS_DIR: &str = "/var/lib/kubelet/pods";
/// Where the agent serves metrics and its health endpoints (Velero's node agent's port).
pub const NODE_AGENT_METRICS_PORT: u16 = 8086;
/// The scratch volume's mount: the root filesystem is read-only.
pub const SCRATCH_VOLUME: &str = "/scratch";
/// The scratch volume's size unless `--scratch-size` says: two restores (the workers) each with
/// a tarball and its items unpacked, at the server's most for one tarball (16 GiB), would not fit
/// whole; a tarball that large is one in a thousand.
pub const SCRATCH_SIZE: &str = "32Gi";
/// The server's scratch directory, which it makes inside the volume: an `emptyDir` is root's, and
/// the server refuses a scratch directory that is not its own.
pub const SCRATCH: &str = "/scratch/ark";

/// Velero's CRDs, byte for byte (config/crd/README.md says why ark installs Velero's own).
const CRDS: [&str; 13] = [
    include_str!("../../../../../config/crd/velero.io_backuprepositories.yaml"),
    include_str!("../../../../../config/crd/velero.io_backups.yaml"),
    include_str!("../../../../../config/crd/velero.io_backupstoragelocations.yaml"),
    include_str!("../../../../../config/crd/velero.io_datadownloads.yaml"),
    include_str!("../../../../../config/crd/velero.io_datauploads.yaml"),
    include_str!("../../../../../config/crd/velero.io_deletebackuprequests.yaml"),
    include_str!("../../../../../config/crd/velero.io_downloadrequests.yaml"),
    include_str!("../../../../../config/crd/velero.io_podvolumebackups.yaml"),
    include_str!("../../../../../config/crd/velero.io_podvolumerestores.yaml"),
    include_str!("../../../../../config/crd/velero.io_restores.yaml"),
    include_str!("../../../../../config/crd/velero.io_schedules.yaml"),
    include_str!("../../../../../config/crd/velero.io_serverstatusrequests.yaml"),
    include_str!("../../../../../config/crd/velero.io_volumesnapshotlocations.yaml"),
];

/// Everything an install is made of, already checked by the argument parser.
#[derive(Debug, Clone)]
pub struct Plan {
    pub namespace: String,
    pub provider: &'static str,
    pub bucket: String,
    pub prefix: Option<String>,
    pub config: Vec<(String, String)>,
    /// The credentials file's contents, stored in the `cloud-credentials` Secret.
    pub credentials: Option<String>,
    pub image: String,
    pub replicas: u16,
    /// The node agent's DaemonSet, reading pods' volumes under this directory of each node (the
    /// kubelet's pod directory); no agent when None.
    pub node_agent: Option<String>,
    /// The ConfigMap of Velero's node agent settings the agent is started with.
    pub node_agent_configmap: Option<String>,
    /// Velero's feature flags the server runs with.
    pub features: Vec<Feature>,
    /// Which new backups the server verifies on its own.
    pub verify_new_backups: VerifyNewBackups,
    /// The most the server's scratch volume may hold (a Kubernetes quantity): past it the kubelet
    /// evicts the server, which another replica or its restart takes over, rather than fill the
    /// node's disk.
    pub scratch_size: String,
}

/// One object to apply, with the API it is served by.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub resource: ApiResource,
    pub namespaced: bool,
    pub object: Value,
}

impl Manifest {
    fn cluster<K: kube::Resource<DynamicType = ()>>(object: Value) -> Self {
        Self::of::<K>(false, object)
    }

    fn namespaced<K: kube::Resource<DynamicType = ()>>(object: Value) -> Self {
        Self::of::<K>(true, object)
    }

    fn of<K: kube::Resource<DynamicType = ()>>(namespaced: bool, mut object: Value) -> Self {
        let resource = ApiResource::erase::<K>(&());
        object["apiVersion"] = json!(resource.api_version);
        object["kind"] = json!(resource.kind);
        Self {
            resource,
            namespaced,
            object,
        }
    }

    pub fn name(&self) -> &str {
        self.object["metadata"]["name"].as_str().unwrap_or_default()
    }

    /// `kind/name` as kubectl prints it (`deployment.apps/ark`).
    pub fn reference(&self) -> String {
        let kind = self.resource.kind.to_lowercase();
        match self.resource.group.as_str() {
            "" => format!("{kind}/{}", self.name()),
            group => format!("{kind}.{group}/{}", self.name()),
        }
    }
}

/// The labels on everything ark installs, so that `kubectl get all -l app.kubernetes.io/part-of=ark`
/// finds it.
fn labels(namespace: &str) -> Value {
    json!({ "app.kubernetes.io/part-of": "ark", "app.kubernetes.io/instance": namespace })
}

fn metadata(name: &str, plan: &Plan) -> Value {
    json!({ "name": name, "labels": labels(&plan.namespace) })
}

fn namespaced_metadata(name: &str, plan: &Plan) -> Value {
    json!({ "name": name, "namespace": plan.namespace, "labels": labels(&plan.namespace) })
}

/// The objects in the order they are applied: the namespace and CRDs first (everything else lives
/// in or refers to them), the Deployment last (it starts work once all it needs exists).
pub fn manifests(plan: &Plan) -> Vec<Manifest> {
    let mut out = vec![Manifest::cluster::<Namespace>(json!({
        "metadata": metadata(&plan.namespace, plan)
    }))];
    for crd in CRDS {
        let object: Value = serde_saphyr::from_str(crd).expect("Velero's CRDs are valid YAML");
        out.push(Manifest::cluster::<CustomResourceDefinition>(object));
    }
    out.push(Manifest::namespaced::<ServiceAccount>(json!({
        "metadata": namespaced_metadata(SERVER, plan)
    })));
    let server_cluster = roles::cluster_role_name(&plan.namespace, &roles::SERVER_CLUSTER);
    out.push(Manifest::cluster::<ClusterRole>(json!({
        "metadata": metadata(&server_cluster, plan),
        "rules": roles::SERVER_CLUSTER.rules_json(),
    })));
    out.push(Manifest::cluster::<ClusterRoleBinding>(json!({
        "metadata": metadata(&server_cluster, plan),
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": server_cluster },
        "subjects": [{ "kind": "ServiceAccount", "name": SERVER, "namespace": plan.namespace }],
    })));
    out.push(Manifest::namespaced::<Role>(json!({
        "metadata": namespaced_metadata(SERVER, plan),
        "rules": roles::SERVER_NAMESPACE.rules_json(),
    })));
    out.push(Manifest::namespaced::<RoleBinding>(json!({
        "metadata": namespaced_metadata(SERVER, plan),
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": SERVER },
        "subjects": [{ "kind": "ServiceAccount", "name": SERVER, "namespace": plan.namespace }],
    })));
    out.push(Manifest::cluster::<ValidatingAdmissionPolicy>(
        server_requests_policy(plan),
    ));
    out.push(Manifest::cluster::<ValidatingAdmissionPolicyBinding>(
        json!({
            "metadata": metadata(&server_requests_policy_name(&plan.namespace), plan),
            "spec": {
                "policyName": server_requests_policy_name(&plan.namespace),
                "validationActions": ["Deny"],
            },
        }),
    ));
    for role in [&roles::VIEWER, &roles::OPERATOR] {
        out.push(Manifest::cluster::<ClusterRole>(json!({
            "metadata": metadata(&roles::cluster_role_name(&plan.namespace, role), plan),
            "rules": role.rules_json(),
        })));
    }
    let mut tenant = metadata(
        &roles::cluster_role_name(&plan.namespace, &roles::TENANT),
        plan,
    );
    for role in roles::TENANT_AGGREGATES_TO {
        tenant["labels"][format!("rbac.authorization.k8s.io/aggregate-to-{role}")] = json!("true");
    }
    out.push(Manifest::cluster::<ClusterRole>(json!({
        "metadata": tenant,
        "rules": roles::TENANT.rules_json(),
    })));
    if let Some(credentials) = &plan.credentials {
        let mut metadata = namespaced_metadata(CREDENTIALS_SECRET, plan);
        // The bucket's credentials never reach the bucket: a backup of this namespace leaves
        // them out (and a person who may download its contents does not read them there).
        metadata["labels"][ark_api::labels::EXCLUDE_FROM_BACKUP] = json!("true");
        out.push(Manifest::namespaced::<Secret>(json!({
            "metadata": metadata,
            "type": "Opaque",
            // `data`, what the API server stores (`stringData` is write-only).
            "data": { CREDENTIALS_KEY: k8s_openapi::ByteString(credentials.clone().into_bytes()) },
        })));
    }
    out.push(Manifest::namespaced::<ark_api::BackupStorageLocation>(
        location(plan),
    ));
    if let Some(pods_dir) = &plan.node_agent {
        out.extend(node_agent(plan, pods_dir));
    }
    out.push(Manifest::namespaced::<Deployment>(deployment(plan)));
    out
}

/// The node agent: its ServiceAccount and roles (see `roles`), and the DaemonSet. It runs as root
/// with only the capabilities that reading and writing other users' files need, on a read-only
/// root filesystem; it sees the kubelet's pod directory (mounts made after it started included).
fn node_agent(plan: &Plan, pods_dir: &str) -> Vec<Manifest> {
    let cluster_role = roles::cluster_role_name(&plan.namespace, &roles::NODE_AGENT_CLUSTER);
    let subjects =
        json!([{ "kind": "ServiceAccount", "name": NODE_AGENT, "namespace": plan.namespace }]);
    let selector = json!({ "name": NODE_AGENT });
    let mut pod_labels = labels(&plan.namespace);
    pod_labels["name"] = json!(NODE_AGENT);
    pod_labels["role"] = json!(NODE_AGENT);
    let mut volumes = vec![json!({ "name": "host-pods", "hostPath": { "path": pods_dir } })];
    let mut mounts = vec![json!({
        "name": "host-pods",
        "mountPath": HOST_PODS,
        "mountPropagation": "HostToContainer",
    })];
    if plan.provider == "file" {
        // The agent reads and writes the repositories in the bucket, as the server does.
        volumes.push(json!({ "name": "bucket", "hostPath": { "path": plan.bucket, "type": "DirectoryOrCreate" } }));
        mounts.push(json!({ "name": "bucket", "mountPath": plan.bucket }));
    }
    let daemon_set = json!({
        "metadata": namespaced_metadata(NODE_AGENT, plan),
        "spec": {
            "selector": { "matchLabels": selector },
            "template": {
                "metadata": { "labels": pod_labels },
                "spec": {
                    "serviceAccountName": NODE_AGENT,
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": {
                        "runAsUser": 0,
                        "runAsGroup": 0,
                        "seccompProfile": { "type": "RuntimeDefault" },
                    },
                    "containers": [{
                        "name": NODE_AGENT,
                        "image": plan.image,
                        "command": [BINARY],
                        "args": node_agent_args(plan),
                        "env": [{
                            "name": "NODE_NAME",
                            "valueFrom": { "fieldRef": { "fieldPath": "spec.nodeName" } },
                        }],
                        "ports": [{ "name": "metrics", "containerPort": NODE_AGENT_METRICS_PORT }],
                        "livenessProbe": probe("/healthz"),
                        "readinessProbe": probe("/readyz"),
                        "resources": {
                            "requests": { "cpu": "100m", "memory": "128Mi" },
                            "limits": { "memory": "512Mi" },
                        },
                        "securityContext": {
                            "readOnlyRootFilesystem": true,
                            "allowPrivilegeEscalation": false,
                            "capabilities": {
                                "drop": ["ALL"],
                                // Read any file; write one back with its owner, mode and times.
                                "add": ["DAC_OVERRIDE", "DAC_READ_SEARCH", "CHOWN", "FOWNER", "FSETID"],
                            },
                        },
                        "volumeMounts": mounts,
                    }],
                    "volumes": volumes,
                },
            },
        },
    });
    vec![
        Manifest::namespaced::<ServiceAccount>(json!({
            "metadata": namespaced_metadata(NODE_AGENT, plan)
        })),
        Manifest::cluster::<ClusterRole>(json!({
            "metadata": metadata(&cluster_role, plan),
            "rules": roles::NODE_AGENT_CLUSTER.rules_json(),
        })),
        Manifest::cluster::<ClusterRoleBinding>(json!({
            "metadata": metadata(&cluster_role, plan),
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role },
            "subjects": subjects,
        })),
        Manifest::namespaced::<Role>(json!({
            "metadata": namespaced_metadata(NODE_AGENT, plan),
            "rules": roles::NODE_AGENT_NAMESPACE.rules_json(),
        })),
        Manifest::namespaced::<RoleBinding>(json!({
            "metadata": namespaced_metadata(NODE_AGENT, plan),
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NODE_AGENT },
            "subjects": subjects,
        })),
        Manifest::namespaced::<DaemonSet>(daemon_set),
        Manifest::cluster::<ValidatingAdmissionPolicy>(agent_pods_policy(plan)),
        Manifest::cluster::<ValidatingAdmissionPolicyBinding>(json!({
            "metadata": metadata(&agent_pods_policy_name(&plan.namespace), plan),
            "spec": {
                "policyName": agent_pods_policy_name(&plan.namespace),
                "validationActions": ["Deny"],
                "matchResources": { "namespaceSelector": { "matchLabels": {
                    "kubernetes.io/metadata.name": plan.namespace,
                } } },
            },
        })),
    ]
}

/// The cluster-scoped name of the policy on the requests of the server installed in `namespace`.
pub fn server_requests_policy_name(namespace: &str) -> String {
    format!("ark-{namespace}-server-requests")
}

/// What the server never asks for and its ClusterRole's `*` still grants (RBAC cannot name every
/// resource but some subresources): a ServiceAccount's token, a proxy to a node, pod or service
/// (a node's is its kubelet's whole API), attaching to or port-forwarding into a pod, an
/// ephemeral container; Velero's requests deleted anywhere but in its namespace and those
/// delegated to it (its ClusterRole deletes tenants' requests, `controllers::tenants`); and any
/// namespace deleted but the throwaway ones of its restore tests (labelled with its namespace). Refused by the API
/// server (a ValidatingAdmissionPolicy) for the server's ServiceAccount only.
fn server_requests_policy(plan: &Plan) -> Value {
    let server = format!("system:serviceaccount:{}:{SERVER}", plan.namespace);
    let rule = |group: &str, version: &str, operation: &str, resources: &[&str]| json!({ "apiGroups": [group], "apiVersions": [version], "operations": [operation], "resources": resources });
    let ns = &plan.namespace;
    let labels = "namespaceObject.metadata.labels";
    let delegated = format!(
        "request.resource.group != 'velero.io' || request.namespace == {ns:?} || \
         (has({labels}) && {TENANT_OF:?} in {labels} && {labels}[{TENANT_OF:?}] == {ns:?})",
        TENANT_OF = ark_server::tenants::TENANT_OF,
    );
    let throwaway = format!(
        "request.resource.resource != 'namespaces' || (has(oldObject.metadata.labels) && \
         {BY:?} in oldObject.metadata.labels && oldObject.metadata.labels[{BY:?}] == {ns:?})",
        BY = ark_api::restore_test::BY_LABEL,
    );
    json!({
        "metadata": metadata(&server_requests_policy_name(&plan.namespace), plan),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": { "resourceRules": [
                rule("", "v1", "CREATE", &["serviceaccounts/token"]),
                rule("", "v1", "CONNECT", &["nodes/proxy", "pods/proxy", "services/proxy", "pods/attach", "pods/portforward"]),
                rule("", "v1", "UPDATE", &["pods/ephemeralcontainers"]),
                rule("velero.io", "v1", "DELETE", &["backups", "restores", "deletebackuprequests", "downloadrequests"]),
                rule("", "v1", "DELETE", &["namespaces"]),
            ] },
            "matchConditions": [{ "name": "by-the-server", "expression": format!("request.userInfo.username == {server:?}") }],
            "validations": [
                {
                    "expression": "request.resource.group == 'velero.io' || request.resource.resource == 'namespaces'",
                    "reason": "Forbidden",
                    "message": "ark's server never asks for a token, a proxy, an attach, a port-forward or an ephemeral container",
                },
                {
                    "expression": delegated,
                    "reason": "Forbidden",
                    "message": format!("ark's server deletes Velero's requests only in namespace {ns} and the namespaces delegated to it"),
                },
                {
                    "expression": throwaway,
                    "reason": "Forbidden",
                    "message": "ark's server deletes no namespace but its restore tests' throwaway ones",
                },
            ],
        },
    })
}

/// The cluster-scoped name of the policy on the node agent's pods in `namespace`.
pub fn agent_pods_policy_name(namespace: &str) -> String {
    format!("ark-{namespace}-node-agent-pods")
}

/// What a pod the node agent creates may be: one that holds a claim mounted, as the agent makes
/// them to expose a snapshot (`exposing_pod`), and nothing RBAC cannot tell apart from it: a
/// pod naming the server's ServiceAccount would carry the server's token, one mounting a host
/// path or running privileged the node. Checked by the API server (a ValidatingAdmissionPolicy)
/// for requests of the agent's ServiceAccount only.
fn agent_pods_policy(plan: &Plan) -> Value {
    let agent = format!("system:serviceaccount:{}:{NODE_AGENT}", plan.namespace);
    let rule = |expression: &str, message: &str| json!({ "expression": expression, "message": message, "reason": "Forbidden" });
    json!({
        "metadata": metadata(&agent_pods_policy_name(&plan.namespace), plan),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": { "resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                "resources": ["pods", "pods/ephemeralcontainers"],
            }] },
            "matchConditions": [{ "name": "by-the-node-agent", "expression": format!("request.userInfo.username == {agent:?}") }],
            "validations": [
                rule("!has(object.spec.serviceAccountName) || object.spec.serviceAccountName in ['', 'default']",
                    "the node agent's pods run as the namespace's default ServiceAccount"),
                rule("has(object.spec.automountServiceAccountToken) && !object.spec.automountServiceAccountToken",
                    "the node agent's pods carry no ServiceAccount token"),
                rule("!has(object.spec.volumes) || object.spec.volumes.all(v, has(v.persistentVolumeClaim) || has(v.emptyDir))",
                    "the node agent's pods mount claims and empty directories only"),
                rule("!has(object.spec.initContainers) && !has(object.spec.ephemeralContainers)",
                    "the node agent's pods have one kind of container"),
                rule("object.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged)",
                    "the node agent's pods are not privileged"),
                rule("!(has(object.spec.hostNetwork) && object.spec.hostNetwork) && !(has(object.spec.hostPID) && object.spec.hostPID) && !(has(object.spec.hostIPC) && object.spec.hostIPC)",
                    "the node agent's pods share nothing of the host's"),
            ],
        },
    })
}

/// The node agent's command line inside the image.
pub fn node_agent_args(plan: &Plan) -> Vec<String> {
    let mut args = vec![
        "node-agent".into(),
        format!("--namespace={}", plan.namespace),
        format!("--host-pods={HOST_PODS}"),
        format!("--metrics-address=0.0.0.0:{NODE_AGENT_METRICS_PORT}"),
    ];
    args.extend(
        (plan.node_agent_configmap.iter()).map(|name| format!("--node-agent-configmap={name}")),
    );
    args
}

/// Every object an install in `namespace` may have applied, whatever its flags (uninstall needs
/// only their kinds and names).
pub fn installed(namespace: &str) -> Vec<Manifest> {
    let mut installed = manifests(&Plan {
        namespace: namespace.into(),
        provider: "file",
        bucket: String::new(),
        prefix: None,
        config: Vec::new(),
        credentials: Some(String::new()),
        image: String::new(),
        replicas: 1,
        node_agent: Some(KUBELET_PODS_DIR.into()),
        node_agent_configmap: None,
        features: Vec::new(),
        scratch_size: SCRATCH_SIZE.into(),
        verify_new_backups: VerifyNewBackups::Off,
    });
    // Roles an earlier install wrote under their former names, removed before the namespace.
    let namespace_at = installed
        .iter()
        .position(|m| m.resource.kind == "Namespace")
        .map_or(0, |at| at + 1);
    for former in roles::FORMER_NAMES {
        let name = format!("ark:{namespace}:{former}");
        installed.insert(
            namespace_at,
            Manifest::cluster::<ClusterRole>(json!({ "metadata": { "name": name } })),
        );
    }
    installed
}

/// The default location, as `velero install` names it.
fn location(plan: &Plan) -> Value {
    let mut spec = json!({
        "provider": plan.provider,
        "default": true,
        "objectStorage": { "bucket": plan.bucket },
    });
    if let Some(prefix) = &plan.prefix {
        spec["objectStorage"]["prefix"] = json!(prefix);
    }
    if !plan.config.is_empty() {
        spec["config"] = Value::Object(
            plan.config
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect(),
        );
    }
    if plan.credentials.is_some() {
        spec["credential"] = json!({ "name": CREDENTIALS_SECRET, "key": CREDENTIALS_KEY });
    }
    json!({ "metadata": namespaced_metadata("default", plan), "spec": spec })
}

/// A probe of the container's health endpoint `path` on its metrics port.
fn probe(path: &str) -> Value {
    json!({ "httpGet": { "path": path, "port": "metrics" }, "periodSeconds": 10, "failureThreshold": 3 })
}

/// The server's command line inside the image.
pub fn server_args(plan: &Plan) -> Vec<String> {
    let mut args = vec![
        "server".into(),
        format!("--namespace={}", plan.namespace),
        format!("--scratch-dir={SCRATCH}"),
        format!("--metrics-address=0.0.0.0:{METRICS_PORT}"),
        // Restored pods wait for their volumes' data in a container of ark's own image.
        format!("--restore-helper-image={}", plan.image),
    ];
    args.extend(Feature::flag(&plan.features));
    if plan.verify_new_backups != VerifyNewBackups::Off {
        let depth = plan
            .verify_new_backups
            .to_possible_value()
            .expect("every value is named");
        args.push(format!("--verify-new-backups={}", depth.get_name()));
    }
    args
}

fn deployment(plan: &Plan) -> Value {
    let selector =
        json!({ "app.kubernetes.io/name": "ark", "app.kubernetes.io/component": "server" });
    let mut pod_labels = labels(&plan.namespace);
    pod_labels["app.kubernetes.io/name"] = json!("ark");
    pod_labels["app.kubernetes.io/component"] = json!("server");
    let mut volumes =
        vec![json!({ "name": "scratch", "emptyDir": { "sizeLimit": plan.scratch_size } })];
    let mut mounts = vec![json!({ "name": "scratch", "mountPath": SCRATCH_VOLUME })];
    if plan.provider == "file" {
        // A `file` bucket is a directory on the node: fit for one-node and test clusters only.
        volumes.push(json!({ "name": "bucket", "hostPath": { "path": plan.bucket, "type": "DirectoryOrCreate" } }));
        mounts.push(json!({ "name": "bucket", "mountPath": plan.bucket }));
    }
    json!({
        "metadata": namespaced_metadata(SERVER, plan),
        "spec": {
            "replicas": plan.replicas,
            "selector": { "matchLabels": selector },
            "template": {
                "metadata": { "labels": pod_labels },
                "spec": {
                    "serviceAccountName": SERVER,
                    // Above the server's default --shutdown-grace (25s), so that running work
                    // finishes before the pod is killed.
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": {
                        "runAsNonRoot": true,
                        "runAsUser": 65532,
                        "runAsGroup": 65532,
                        "seccompProfile": { "type": "RuntimeDefault" },
                    },
                    "containers": [{
                        "name": "ark",
                        "image": plan.image,
                        "command": [BINARY],
                        "args": server_args(plan),
                        // Its identity in the Lease (see `ark server --id`).
                        "env": [{
                            "name": "POD_NAME",
                            "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } },
                        }],
                        "ports": [{ "name": "metrics", "containerPort": METRICS_PORT }],
                        "livenessProbe": probe("/healthz"),
                        "readinessProbe": probe("/readyz"),
                        "resources": {
                            "requests": { "cpu": "100m", "memory": "128Mi" },
                            "limits": { "memory": "512Mi" },
                        },
                        "securityContext": {
                            "readOnlyRootFilesystem": true,
                            "allowPrivilegeEscalation": false,
                            "capabilities": { "drop": ["ALL"] },
                        },
                        "volumeMounts": mounts,
                    }],
                    "volumes": volumes,
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            namespace: "velero".into(),
            provider: "aws",
            bucket: "backups".into(),
            prefix: Some("cluster-a".into()),
            config: vec![("region".into(), "eu-west-1".into())],
            credentials: Some("[default]\n".into()),
            image: "example/ark:1".into(),
            replicas: 2,
            node_agent: Some(KUBELET_PODS_DIR.into()),
            node_agent_configmap: None,
            features: vec![Feature::EnableApiGroupVersions, Feature::EnableCsi],
            scratch_size: SCRATCH_SIZE.into(),
            verify_new_backups: VerifyNewBackups::Off,
        }
    }

    #[test]
    fn the_server_verifies_new_backups_only_when_the_install_says_so() {
        let flag = |plan: &Plan| {
            (server_args(plan).into_iter()).find(|a| a.starts_with("--verify-new-backups"))
        };
        assert_eq!(flag(&plan()), None);
        let verifying = Plan {
            verify_new_backups: VerifyNewBackups::Data,
            ..plan()
        };
        assert_eq!(
            flag(&verifying).as_deref(),
            Some("--verify-new-backups=data")
        );
    }

    #[test]
    fn uninstall_removes_the_roles_an_earlier_install_wrote_under_their_former_names_before_the_namespace()
     {
        let references: Vec<String> = installed("velero")
            .iter()
            .map(Manifest::reference)
            .collect();
        let at = |name: &str| references.iter().position(|r| r == name);
        for former in ["viewer", "operator"] {
            let role = format!("clusterrole.rbac.authorization.k8s.io/ark:velero:{former}");
            assert!(
                at(&role).unwrap() > at("namespace/velero").unwrap(),
                "{references:?}"
            );
        }
        assert!(at("clusterrole.rbac.authorization.k8s.io/ark:velero:admin-viewer").is_some());
        assert!(at("clusterrole.rbac.authorization.k8s.io/ark:velero:tenant").is_some());
    }

    #[test]
    fn every_crd_comes_before_the_location_and_the_deployment_comes_last() {
        let all = manifests(&plan());
        let kinds: Vec<&str> = all.iter().map(|m| m.resource.kind.as_str()).collect();
        assert_eq!(kinds[0], "Namespace");
        assert_eq!(
            kinds
                .iter()
                .filter(|k| **k == "CustomResourceDefinition")
                .count(),
            13
        );
        let last_crd = kinds
            .iter()
            .rposition(|k| *k == "CustomResourceDefinition")
            .unwrap();
        let location = kinds
            .iter()
            .position(|k| *k == "BackupStorageLocation")
            .unwrap();
        assert!(last_crd < location);
        assert_eq!(kinds.last(), Some(&"Deployment"));
    }

    #[test]
    fn the_deployment_runs_the_binary_the_image_holds_as_the_server() {
        let all = manifests(&plan());
        let container = &all.last().unwrap().object["spec"]["template"]["spec"]["containers"][0];
        let mut line = vec![container["command"][0].as_str().unwrap().to_string()];
        line.extend(
            container["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string()),
        );
        let dockerfile = include_str!("../../../../../Dockerfile");
        assert!(
            dockerfile.contains(&format!("ENTRYPOINT [\"{BINARY}\"]")),
            "the image's entrypoint is {BINARY}"
        );
        use clap::Parser as _;
        let cli = crate::cli::Cli::try_parse_from(&line).unwrap();
        assert_eq!(cli.global.namespace, "velero");
        let crate::cli::Command::Server(server) = cli.command else {
            panic!("{line:?} is not `ark server`")
        };
        assert_eq!(
            server.scratch_dir.as_deref(),
            Some(std::path::Path::new(SCRATCH))
        );
        assert_eq!(server.metrics_address.unwrap().port(), METRICS_PORT);
        assert_eq!(
            server.features,
            [Feature::EnableApiGroupVersions, Feature::EnableCsi]
        );
        assert_eq!(container["ports"][0]["containerPort"], METRICS_PORT);
        assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    }

    #[test]
    fn the_location_reads_the_installed_secret() {
        let all = manifests(&plan());
        let location = all
            .iter()
            .find(|m| m.resource.kind == "BackupStorageLocation")
            .unwrap();
        assert_eq!(
            location.object["spec"]["credential"],
            json!({ "name": "cloud-credentials", "key": "cloud" })
        );
        assert_eq!(
            location.object["spec"]["objectStorage"]["prefix"],
            "cluster-a"
        );
        assert_eq!(location.object["spec"]["config"]["region"], "eu-west-1");
        assert!(
            all.iter()
                .any(|m| m.reference() == "secret/cloud-credentials")
        );
    }
}
