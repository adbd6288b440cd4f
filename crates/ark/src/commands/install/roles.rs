//! The permissions `ark install` grants, written out rule by rule: the server's (a ClusterRole for
//! what a backup or restore of any resource needs, a Role for ark's own objects in its namespace)
//! and two for people (viewer, operator). No `*` verb anywhere, and none of `bind`, `escalate`,
//! `impersonate`: a restore can create only what the server itself may hold, so a backup holding
//! a binding to cluster-admin cannot be restored into more rights than the server had.
//!
//! The same rules answer "which of ark's roles grants this?" when the API server refuses a request.

use serde_json::{Value, json};

/// One RBAC policy rule.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub groups: &'static [&'static str],
    pub resources: &'static [&'static str],
    pub verbs: &'static [&'static str],
    /// Only these objects (`resourceNames`); every one when empty.
    pub names: &'static [&'static str],
}

impl Rule {
    fn to_json(self) -> Value {
        let mut rule =
            json!({ "apiGroups": self.groups, "resources": self.resources, "verbs": self.verbs });
        if !self.names.is_empty() {
            rule["resourceNames"] = json!(self.names);
        }
        rule
    }

    /// Whether the rule allows `verb` on `resource` (`pods/exec` for a subresource) in `group`,
    /// as the RBAC authorizer matches it.
    fn allows(&self, verb: &str, group: &str, resource: &str) -> bool {
        let any = |list: &[&str], wanted: &str| list.iter().any(|&x| x == "*" || x == wanted);
        any(self.verbs, verb) && any(self.groups, group) && any(self.resources, resource)
    }
}

/// A role of ark's: its name's last part (`server`, `viewer`, `operator`) and its rules.
#[derive(Debug)]
pub struct Role {
    pub name: &'static str,
    pub rules: &'static [Rule],
}

impl Role {
    pub fn rules_json(&self) -> Vec<Value> {
        self.rules.iter().map(|rule| rule.to_json()).collect()
    }

    pub fn allows(&self, verb: &str, group: &str, resource: &str) -> bool {
        self.rules.iter().any(|r| r.allows(verb, group, resource))
    }
}

/// Velero's kinds that ark's server writes in its namespace.
const OPERATIONS: &[&str] = &[
    "backups",
    "backups/status",
    "restores",
    "restores/status",
    "deletebackuprequests",
    "deletebackuprequests/status",
    "downloadrequests",
    "downloadrequests/status",
    "serverstatusrequests",
    "serverstatusrequests/status",
];

/// The server, cluster-wide. A backup reads every resource it includes and a restore creates any
/// kind its backup holds, custom resources included: their definitions may be installed after
/// ark, or come with the restore itself (a cluster rebuilt from its backup), so these rules name
/// every resource (`*`). RBAC cannot leave out what that takes in (`serviceaccounts/token`,
/// `nodes/proxy`, webhook configurations): see docs/install.md.
pub const SERVER_CLUSTER: Role = Role {
    name: "server",
    rules: &[
        // A backup reads every resource it includes, and discovery lists them all
        Rule {
            groups: &["*"],
            resources: &["*"],
            verbs: &["get", "list", "watch"],
            names: &[],
        },
        // A restore creates any kind its backup holds and patches existing objects under
        // existingResourcePolicy=update; the server makes its own kinds (PodVolumeBackups,
        // DataUploads, BackupRepositories...) and cuts CSI snapshots
        Rule {
            groups: &["*"],
            resources: &["*"],
            verbs: &["create", "patch"],
            names: &[],
        },
        // A restore's `restoreStatus` puts a backed-up status back (a replace of the subresource)
        Rule {
            groups: &["*"],
            resources: &["*/status"],
            verbs: &["update"],
            names: &[],
        },
        // A backup removes the VolumeSnapshots it cut once they are ready (keeping the storage
        // snapshots), and deleting a backup deletes the storage snapshots it took
        Rule {
            groups: &["snapshot.storage.k8s.io"],
            resources: &["volumesnapshots", "volumesnapshotcontents"],
            verbs: &["delete"],
            names: &[],
        },
        // A tenant's request goes once its mirror is gone (its backup deleted, its answer
        // expired), and a download request it may not have is removed unanswered
        // (`controllers::tenants`)
        Rule {
            groups: &["velero.io"],
            resources: TENANT_REQUESTS,
            verbs: &["delete"],
            names: &[],
        },
        // A schedule's restore test removes its throwaway namespaces (and only those: the server's
        // admission policy refuses it any other, `manifests::server_requests_policy`)
        Rule {
            groups: &[""],
            resources: &["namespaces"],
            verbs: &["delete"],
            names: &[],
        },
    ],
};

/// The server, in its own namespace.
pub const SERVER_NAMESPACE: Role = Role {
    name: "server",
    rules: &[
        // Backups, restores and deletion requests are claimed, reported on and, when a backup is
        // deleted, removed
        Rule {
            groups: &["velero.io"],
            resources: OPERATIONS,
            verbs: &["create", "update", "patch", "delete"],
            names: &[],
        },
        // A finished deletion removes every request for its backup in one request
        Rule {
            groups: &["velero.io"],
            resources: &["deletebackuprequests"],
            verbs: &["deletecollection"],
            names: &[],
        },
        // Each location's phase is written after it is checked
        Rule {
            groups: &["velero.io"],
            resources: &["backupstoragelocations", "backupstoragelocations/status"],
            verbs: &["update", "patch"],
            names: &[],
        },
        // One replica leads through a Lease
        Rule {
            groups: &["coordination.k8s.io"],
            resources: &["leases"],
            verbs: &["create", "update"],
            names: &[],
        },
        // Warnings a user must see on the object itself
        Rule {
            groups: &["", "events.k8s.io"],
            resources: &["events"],
            verbs: &["create", "patch"],
            names: &[],
        },
    ],
};

/// The node agent, cluster-wide: it finds a pod's volume on its node from the pod, its claim, the
/// claim's volume and the CSI drivers; to move a CSI snapshot's data it takes the snapshot over
/// from the claim's namespace into ark's, and lets the volume it made from it go; to write moved
/// data back it reads the restored claim's class and hands the volume it wrote to that claim. It
/// reads its node's labels (Velero's `loadConcurrency` rules select nodes by them) and the priority
/// class its settings name.
pub const NODE_AGENT_CLUSTER: Role = Role {
    name: "node-agent",
    rules: &[
        Rule {
            groups: &[""],
            resources: &[
                "pods",
                "persistentvolumeclaims",
                "persistentvolumes",
                "nodes",
            ],
            verbs: &["get"],
            names: &[],
        },
        Rule {
            groups: &["storage.k8s.io"],
            resources: &["csidrivers"],
            verbs: &["list"],
            names: &[],
        },
        Rule {
            groups: &["storage.k8s.io"],
            resources: &["storageclasses"],
            verbs: &["get"],
            names: &[],
        },
        // Velero's `priorityClassName` setting, used only when the class is there
        Rule {
            groups: &["scheduling.k8s.io"],
            resources: &["priorityclasses"],
            verbs: &["get"],
            names: &[],
        },
        Rule {
            groups: &["snapshot.storage.k8s.io"],
            resources: &["volumesnapshots"],
            verbs: &["get", "delete"],
            names: &[],
        },
        Rule {
            groups: &["snapshot.storage.k8s.io"],
            resources: &["volumesnapshotcontents"],
            verbs: &["get", "create", "patch", "delete"],
            names: &[],
        },
        Rule {
            groups: &[""],
            resources: &["persistentvolumes"],
            verbs: &["patch", "delete"],
            names: &[],
        },
        // The restored claim's `volumeName`, once its data is written
        Rule {
            groups: &[""],
            resources: &["persistentvolumeclaims"],
            verbs: &["patch"],
            names: &[],
        },
    ],
};

/// The node agent, in ark's namespace: the requests it carries out, the locations they name, and
/// of the Secrets only the repositories' password and the installed location's credentials.
pub const NODE_AGENT_NAMESPACE: Role = Role {
    name: "node-agent",
    rules: &[
        Rule {
            groups: &["velero.io"],
            resources: &[
                "podvolumebackups",
                "podvolumerestores",
                "datauploads",
                "datadownloads",
            ],
            verbs: &["get", "list", "watch", "patch"],
            names: &[],
        },
        // A snapshot whose data it moves is exposed here: a snapshot and a claim made from it,
        // mounted by a pod of the agent's image and placement, all removed once the data is moved
        Rule {
            groups: &["snapshot.storage.k8s.io"],
            resources: &["volumesnapshots"],
            verbs: &["create"],
            names: &[],
        },
        Rule {
            groups: &[""],
            resources: &["pods", "persistentvolumeclaims"],
            verbs: &["create", "delete"],
            names: &[],
        },
        // The exposing pods, watched to move on as soon as one runs
        Rule {
            groups: &[""],
            resources: &["pods"],
            verbs: &["list", "watch"],
            names: &[],
        },
        Rule {
            groups: &["apps"],
            resources: &["daemonsets"],
            verbs: &["get"],
            names: &[ark_server::node_agent::DAEMON_SET],
        },
        Rule {
            groups: &["velero.io"],
            resources: &["backupstoragelocations"],
            verbs: &["get"],
            names: &[],
        },
        // Velero's node agent settings (`--node-agent-configmap`), read at start
        Rule {
            groups: &[""],
            resources: &["configmaps"],
            verbs: &["get"],
            names: &[],
        },
        Rule {
            groups: &[""],
            resources: &["secrets"],
            verbs: &["get"],
            names: &[
                super::CREDENTIALS_SECRET,
                ark_server::repositories::PASSWORD_SECRET,
            ],
        },
        Rule {
            groups: &["", "events.k8s.io"],
            resources: &["events"],
            verbs: &["create", "patch"],
            names: &[],
        },
    ],
};

const VIEWED: &[&str] = &[
    "backups",
    "restores",
    "deletebackuprequests",
    "backupstoragelocations",
    "volumesnapshotlocations",
    "schedules",
    "podvolumebackups",
    "podvolumerestores",
    "datauploads",
    "datadownloads",
];

const VIEWER_RULES: [Rule; 2] = [
    // Get, describe and follow backups, restores, locations and deletion attempts
    Rule {
        groups: &["velero.io"],
        resources: VIEWED,
        verbs: &["get", "list", "watch"],
        names: &[],
    },
    // Logs and details are fetched through DownloadRequests, and the server's version asked
    // with a ServerStatusRequest (as Velero's CLI does both)
    Rule {
        groups: &["velero.io"],
        resources: &["downloadrequests", "serverstatusrequests"],
        verbs: &["get", "list", "watch", "create", "delete"],
        names: &[],
    },
];

/// For people who look: get, describe, logs.
pub const VIEWER: Role = Role {
    name: "admin-viewer",
    rules: &VIEWER_RULES,
};

/// For people who also act: create backups, restores and deletion requests.
pub const OPERATOR: Role = Role {
    name: "admin-operator",
    rules: &[
        VIEWER_RULES[0],
        VIEWER_RULES[1],
        // Create backups and restores, and ask for backups to be deleted
        Rule {
            groups: &["velero.io"],
            resources: &["backups", "restores", "deletebackuprequests"],
            verbs: &["create"],
            names: &[],
        },
    ],
};

/// What a delegated namespace's people ask of the server in their own namespace.
const TENANT_REQUESTS: &[&str] = &[
    "backups",
    "restores",
    "deletebackuprequests",
    "downloadrequests",
];

/// For a namespace's own people, aggregated into the built-in `admin` and `edit` roles (see
/// [`TENANT_AGGREGATES_TO`]): Velero's requests in their own namespace, which the server checks
/// and carries out only in a namespace delegated to it (labelled `ark.io/tenant-of`), as
/// `controllers::tenants` says. Nothing in ark's namespace: no location, no credentials.
pub const TENANT: Role = Role {
    name: "tenant",
    rules: &[
        // Back up, restore, delete a backup, fetch a backup's or restore's files
        Rule {
            groups: &["velero.io"],
            resources: TENANT_REQUESTS,
            verbs: &["get", "list", "watch", "create", "delete"],
            names: &[],
        },
        // `describe` lists a backup's volume requests where the backup is
        Rule {
            groups: &["velero.io"],
            resources: &[
                "podvolumebackups",
                "podvolumerestores",
                "datauploads",
                "datadownloads",
            ],
            verbs: &["get", "list", "watch"],
            names: &[],
        },
    ],
};

/// The built-in roles the tenant role is aggregated into: whoever administers or edits a
/// namespace (and so may exec into its pods and read its Secrets) may back it up and restore it.
pub const TENANT_AGGREGATES_TO: &[&str] = &["admin", "edit"];

/// The names the admin-viewer and admin-operator roles had before they said whose they are: an
/// upgrade leaves such roles in place (bindings to them keep their rights until rebound), and
/// uninstall removes them with the rest.
pub const FORMER_NAMES: &[&str] = &["viewer", "operator"];

/// The cluster-scoped name of one of ark's roles installed in `namespace`: cluster-scoped objects
/// carry the namespace so that two installs do not share (and uninstall each other's) roles.
pub fn cluster_role_name(namespace: &str, role: &Role) -> String {
    format!("ark:{namespace}:{}", role.name)
}

/// The least of the people's roles that allows the request, if any does.
pub fn granting(verb: &str, group: &str, resource: &str) -> Option<&'static Role> {
    [&VIEWER, &OPERATOR]
        .into_iter()
        .find(|role| role.allows(verb, group, resource))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_role_grants_a_wildcard_verb_or_one_that_escalates() {
        for role in [
            &SERVER_CLUSTER,
            &SERVER_NAMESPACE,
            &NODE_AGENT_CLUSTER,
            &NODE_AGENT_NAMESPACE,
            &VIEWER,
            &OPERATOR,
            &TENANT,
        ] {
            for rule in role.rules {
                for verb in rule.verbs {
                    assert!(
                        !["*", "bind", "escalate", "impersonate"].contains(verb),
                        "{}: {verb}",
                        role.name
                    );
                }
            }
        }
    }

    #[test]
    fn the_least_role_granting_a_request_is_named() {
        assert_eq!(
            granting("get", "velero.io", "backups").unwrap().name,
            "admin-viewer"
        );
        assert_eq!(
            granting("create", "velero.io", "backups").unwrap().name,
            "admin-operator"
        );
        assert_eq!(
            granting("create", "velero.io", "deletebackuprequests")
                .unwrap()
                .name,
            "admin-operator"
        );
        assert!(granting("delete", "velero.io", "backups").is_none());
        assert!(granting("get", "", "secrets").is_none());
    }

    #[test]
    fn the_server_makes_its_own_kinds_and_cuts_snapshots_whatever_install_found_served() {
        // (An install on a fresh cluster looks before it applies Velero's CRDs.)
        for resource in [
            "podvolumebackups",
            "podvolumerestores",
            "datauploads",
            "datadownloads",
            "backuprepositories",
            "schedules",
        ] {
            assert!(
                SERVER_CLUSTER.allows("create", "velero.io", resource),
                "{resource}"
            );
            assert!(
                SERVER_CLUSTER.allows("patch", "velero.io", resource),
                "{resource}"
            );
        }
        assert!(SERVER_CLUSTER.allows("create", "snapshot.storage.k8s.io", "volumesnapshots"));
        assert!(SERVER_CLUSTER.allows(
            "delete",
            "snapshot.storage.k8s.io",
            "volumesnapshotcontents"
        ));
    }

    #[test]
    fn only_the_server_may_exec_into_pods() {
        assert!(SERVER_CLUSTER.allows("create", "", "pods/exec"));
        assert!(!OPERATOR.allows("create", "", "pods/exec"));
    }
}
