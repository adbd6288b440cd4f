//! Velero's include/exclude rules for namespaces and resources, shared by backup and restore.

/// A list of includes and excludes; `*` (or no includes) means everything.
#[derive(Clone, Debug, Default)]
pub struct IncludesExcludes {
    includes: Vec<String>,
    excludes: Vec<String>,
}

impl IncludesExcludes {
    pub fn new(includes: Option<&Vec<String>>, excludes: Option<&Vec<String>>) -> Self {
        let clean = |list: Option<&Vec<String>>| -> Vec<String> {
            list.into_iter()
                .flatten()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        };
        Self {
            includes: clean(includes),
            excludes: clean(excludes),
        }
    }

    pub fn includes_everything(&self) -> bool {
        self.includes.is_empty() || self.includes.iter().any(|i| i == "*")
    }

    pub fn excludes_nothing(&self) -> bool {
        self.excludes.is_empty()
    }

    /// The explicit includes (not `*`).
    pub fn named_includes(&self) -> impl Iterator<Item = &str> {
        self.includes
            .iter()
            .map(String::as_str)
            .filter(|i| *i != "*")
    }

    /// Whether any of the names an item goes by is included and none is excluded.
    pub fn should_include_any(&self, names: &[&str]) -> bool {
        if self.excludes.iter().any(|e| names.contains(&e.as_str())) {
            return false;
        }
        self.includes_everything() || self.includes.iter().any(|i| names.contains(&i.as_str()))
    }

    pub fn should_include(&self, name: &str) -> bool {
        self.should_include_any(&[name])
    }

    /// Velero's validation: `*` cannot be excluded and nothing may be both included and excluded.
    pub fn validate(&self, what: &str) -> Vec<String> {
        let mut errors = Vec::new();
        if self.excludes.iter().any(|e| e == "*") {
            errors.push(format!("excludes list for {what} cannot contain '*'"));
        }
        for item in &self.includes {
            if self.excludes.contains(item) {
                errors.push(format!("{what} {item:?} is both included and excluded"));
            }
        }
        errors
    }
}

/// The names a resource goes by in filters: `deployments`, `deployments.apps`, `deployment`.
pub fn resource_names<'a>(
    plural: &'a str,
    group_resource: &'a str,
    kind_lower: &'a str,
) -> [&'a str; 3] {
    [plural, group_resource, kind_lower]
}

/// Whether cluster-scoped resources are part of the operation: as set, or, when unset, only when
/// every namespace is.
pub fn include_cluster_scoped(setting: Option<bool>, namespaces: &IncludesExcludes) -> bool {
    setting.unwrap_or_else(|| namespaces.includes_everything() && namespaces.excludes_nothing())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Option<Vec<String>> {
        Some(items.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn includes_and_excludes() {
        let all = IncludesExcludes::new(None, None);
        assert!(all.should_include("anything"));
        let some = IncludesExcludes::new(list(&["shop", "db"]).as_ref(), None);
        assert!(some.should_include("shop"));
        assert!(!some.should_include("other"));
        let but = IncludesExcludes::new(list(&["*"]).as_ref(), list(&["kube-system"]).as_ref());
        assert!(but.should_include("shop"));
        assert!(!but.should_include("kube-system"));
    }

    #[test]
    fn resources_match_by_any_name() {
        let filter = IncludesExcludes::new(list(&["deployments", "configmaps"]).as_ref(), None);
        assert!(filter.should_include_any(&resource_names(
            "deployments",
            "deployments.apps",
            "deployment"
        )));
        assert!(!filter.should_include_any(&resource_names("pods", "pods", "pod")));
        let excluded = IncludesExcludes::new(None, list(&["secrets"]).as_ref());
        assert!(!excluded.should_include_any(&resource_names("secrets", "secrets", "secret")));
    }

    #[test]
    fn validation_names_the_conflict() {
        let filter = IncludesExcludes::new(list(&["a"]).as_ref(), list(&["a", "*"]).as_ref());
        assert_eq!(
            filter.validate("namespace"),
            [
                "excludes list for namespace cannot contain '*'",
                "namespace \"a\" is both included and excluded"
            ]
        );
    }

    #[test]
    fn cluster_scoped_only_with_every_namespace_unless_set() {
        let all = IncludesExcludes::new(None, None);
        let some = IncludesExcludes::new(list(&["shop"]).as_ref(), None);
        assert!(include_cluster_scoped(None, &all));
        assert!(!include_cluster_scoped(None, &some));
        assert!(include_cluster_scoped(Some(true), &some));
        assert!(!include_cluster_scoped(Some(false), &all));
    }
}
