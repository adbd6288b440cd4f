//! The errors a person can act on, said in their terms: who may not do what where (and which of
//! ark's roles allows it), a cluster that does not serve ark's kinds, a cluster out of reach.

use crate::commands::install::roles;

/// A sentence explaining `error` when one of its causes is a refusal, a missing API, another
/// answer of the API server or an unreachable cluster; `namespace` is ark's (its roles are named
/// after it).
pub fn explain(error: &anyhow::Error, namespace: &str) -> Option<String> {
    for cause in error.chain() {
        match cause.downcast_ref::<kube::Error>() {
            Some(kube::Error::Api(status)) => {
                return match status.code {
                    403 => Some(Forbidden::parse(&status.message).map_or_else(
                        || format!("forbidden: {}", status.message),
                        |forbidden| forbidden.explain(namespace),
                    )),
                    // Not found without a name: the API itself is not served.
                    404 if status.details.as_ref().is_none_or(|d| d.name.is_empty()) => Some(
                        "the cluster does not serve velero.io/v1: ark's CRDs (Velero's) are not \
                         installed; install them with `ark install`"
                            .to_string(),
                    ),
                    // Any other refusal in the API server's own words, without the debug dump of
                    // the whole Status that kube's `Display` appends.
                    _ if !status.message.is_empty() => Some(status.message.clone()),
                    _ => None,
                };
            }
            Some(kube::Error::HyperError(_) | kube::Error::Service(_)) => {
                let root = error.root_cause();
                return Some(match crate::context::cluster_url() {
                    Some(url) => format!("cannot reach the cluster at {url}: {root}"),
                    None => format!("cannot reach the cluster: {root}"),
                });
            }
            _ => {}
        }
    }
    None
}

/// The parts of the RBAC authorizer's refusal: `User "U" cannot VERB resource "R" in API group
/// "G" in the namespace "N"` (or `at the cluster scope`).
#[derive(Debug, PartialEq, Eq)]
struct Forbidden<'a> {
    user: &'a str,
    verb: &'a str,
    resource: &'a str,
    group: &'a str,
    namespace: Option<&'a str>,
}

impl<'a> Forbidden<'a> {
    fn parse(message: &'a str) -> Option<Self> {
        let quoted = |text: &'a str, before: &str| -> Option<(&'a str, &'a str)> {
            let rest = text.split_once(before)?.1.strip_prefix('"')?;
            rest.split_once('"')
        };
        let (user, rest) = quoted(message, "User ")?;
        let rest = rest.strip_prefix(" cannot ")?;
        let (verb, rest) = rest.split_once(' ')?;
        let (resource, rest) = quoted(rest, "resource ")?;
        let (group, rest) = quoted(rest, "in API group ")?;
        let namespace = quoted(rest, "in the namespace ").map(|(ns, _)| ns);
        Some(Self {
            user,
            verb,
            resource,
            group,
            namespace,
        })
    }

    fn explain(&self, ark_namespace: &str) -> String {
        let what = match self.group {
            "" => self.resource.to_string(),
            group => format!("{}.{group}", self.resource),
        };
        let place = match self.namespace {
            Some(namespace) => format!("in namespace {namespace}"),
            None => "cluster-wide".to_string(),
        };
        let mut text = format!(
            "forbidden: {} may not {} {what} {place}",
            self.user, self.verb
        );
        match roles::granting(self.verb, self.group, self.resource) {
            Some(role) => {
                let cluster_role = roles::cluster_role_name(ark_namespace, role);
                let subject = match self.user.strip_prefix("system:serviceaccount:") {
                    Some(account) => format!("--serviceaccount={account}"),
                    None => format!("--user={}", self.user),
                };
                let binding = format!(
                    "kubectl create rolebinding ark-{}-{} -n {} --clusterrole={cluster_role} {subject}",
                    role.name,
                    self.user.rsplit(':').next().unwrap_or(self.user),
                    self.namespace.unwrap_or(ark_namespace),
                );
                text.push_str(&format!(
                    ". ark's {} role ({cluster_role}) allows it; an administrator grants it with:\n  {binding}",
                    role.name
                ));
            }
            None => text.push_str(". None of ark's roles for people allows it."),
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespaced_refusal_is_read_whole() {
        let message = r#"backups.velero.io is forbidden: User "system:serviceaccount:team:bob" cannot create resource "backups" in API group "velero.io" in the namespace "velero""#;
        assert_eq!(
            Forbidden::parse(message),
            Some(Forbidden {
                user: "system:serviceaccount:team:bob",
                verb: "create",
                resource: "backups",
                group: "velero.io",
                namespace: Some("velero"),
            })
        );
        assert_eq!(
            Forbidden::parse(message).unwrap().explain("velero"),
            "forbidden: system:serviceaccount:team:bob may not create backups.velero.io in \
             namespace velero. ark's admin-operator role (ark:velero:admin-operator) allows it; an \
             administrator grants it with:\n  kubectl create rolebinding ark-admin-operator-bob -n \
             velero --clusterrole=ark:velero:admin-operator --serviceaccount=team:bob"
        );
    }

    #[test]
    fn a_cluster_wide_refusal_of_what_no_role_allows_says_so() {
        let message = r#"namespaces is forbidden: User "alice" cannot list resource "namespaces" in API group "" at the cluster scope"#;
        let forbidden = Forbidden::parse(message).unwrap();
        assert_eq!(forbidden.namespace, None);
        assert_eq!(
            forbidden.explain("velero"),
            "forbidden: alice may not list namespaces cluster-wide. None of ark's roles for \
             people allows it."
        );
    }

    fn api_error(code: u16, name: &str) -> anyhow::Error {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "status": "Failure",
            "code": code,
            "reason": "NotFound",
            "message": "the server could not find the requested resource",
            "details": { "name": name },
        }))
        .unwrap();
        anyhow::Error::new(kube::Error::Api(Box::new(status))).context("cannot list backups")
    }

    #[test]
    fn an_api_the_cluster_does_not_serve_is_told_apart_from_a_missing_object() {
        assert_eq!(
            explain(&api_error(404, ""), "velero").as_deref(),
            Some(
                "the cluster does not serve velero.io/v1: ark's CRDs (Velero's) are not \
                 installed; install them with `ark install`"
            )
        );
        assert_eq!(
            explain(&api_error(404, "nightly"), "velero").as_deref(),
            Some("the server could not find the requested resource")
        );
        assert_eq!(
            explain(&api_error(409, ""), "velero").as_deref(),
            Some("the server could not find the requested resource")
        );
    }

    #[test]
    fn a_message_of_another_shape_is_not_read() {
        assert_eq!(Forbidden::parse("forbidden by a webhook"), None);
    }
}
