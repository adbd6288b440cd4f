//! Velero's include/exclude rules for namespaces and resources, shared by backup, restore and
//! restore hooks. Each entry is a glob, as Velero compiles it (gobwas/glob without separators):
//! `shop-*` includes `shop-a` and `shop-x.y`.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::core::{Selector, SelectorExt};

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

    /// [`new`](Self::new), with Velero's errors about the list (see [`validate`](Self::validate))
    /// added to `errors`: the step every validation of filters takes.
    pub fn checked(
        includes: Option<&Vec<String>>,
        excludes: Option<&Vec<String>>,
        what: &str,
        errors: &mut Vec<String>,
    ) -> Self {
        let list = Self::new(includes, excludes);
        errors.extend(list.validate(what));
        list
    }

    /// Whether an exclude matches any of the names an item goes by.
    pub fn excludes_any(&self, names: &[&str]) -> bool {
        self.excludes
            .iter()
            .any(|p| names.iter().any(|name| glob_matches(p, name)))
    }

    /// The list without the entries `dropped` says go (`*` always stays).
    fn without(self, dropped: impl Fn(&str) -> bool) -> Self {
        let keep = |list: Vec<String>| -> Vec<String> {
            list.into_iter()
                .filter(|entry| entry == "*" || !dropped(entry))
                .collect()
        };
        Self {
            includes: keep(self.includes),
            excludes: keep(self.excludes),
        }
    }

    /// The list with a resource policy's entries added, Velero's `CombineWithPolicy`: an entry
    /// joins (excludes first) unless the list already includes or excludes it, so that the
    /// backup's own filters win.
    pub fn combined_with(mut self, includes: &[String], excludes: &[String]) -> Self {
        let listed = |list: &IncludesExcludes, item: &str| {
            let matched = |patterns: &[String]| patterns.iter().any(|p| glob_matches(p, item));
            matched(&list.includes) || matched(&list.excludes)
        };
        for item in excludes {
            if !listed(&self, item) {
                self.excludes.push(item.clone());
            }
        }
        for item in includes {
            if !listed(&self, item) {
                self.includes.push(item.clone());
            }
        }
        self
    }

    /// Velero's validation of a scoped list (`ValidateScopedIncludesExcludes`): `*` alone or not
    /// at all, no includes beside an exclude of `*`, nothing both included and excluded.
    pub fn validate_scoped(&self, what: &str) -> Vec<String> {
        let mut errors = Vec::new();
        let star = |list: &[String]| list.iter().any(|e| e == "*");
        let invalid = format!("Invalid {what} included/excluded resource lists");
        if self.includes.len() > 1 && star(&self.includes) {
            errors.push(format!(
                "{invalid}: includes list must either contain '*' only, or a non-empty list of items"
            ));
        }
        if self.excludes.len() > 1 && star(&self.excludes) {
            errors.push(format!(
                "{invalid}: excludes list must either contain '*' only, or a non-empty list of items"
            ));
        }
        if !self.includes.is_empty() && star(&self.excludes) {
            errors.push(format!(
                "{invalid}: when exclude is '*', include cannot have value"
            ));
        }
        for item in &self.excludes {
            if self.includes.contains(item) {
                errors.push(format!(
                    "{invalid}: excludes list cannot contain an item in the includes list: {item}"
                ));
            }
        }
        errors
    }

    pub fn includes_everything(&self) -> bool {
        self.includes.is_empty() || self.includes.iter().any(|i| i == "*")
    }

    pub fn excludes_nothing(&self) -> bool {
        self.excludes.is_empty()
    }

    /// The explicit includes (not `*`) that match none of `names`.
    pub fn unmatched_includes<'a>(&'a self, names: &'a [String]) -> impl Iterator<Item = &'a str> {
        self.includes
            .iter()
            .map(String::as_str)
            .filter(|i| *i != "*")
            .filter(|i| !names.iter().any(|name| glob_matches(i, name)))
    }

    /// Whether any of the names an item goes by is included and none is excluded.
    pub fn should_include_any(&self, names: &[&str]) -> bool {
        let matches = |patterns: &[String]| {
            patterns
                .iter()
                .any(|p| names.iter().any(|name| glob_matches(p, name)))
        };
        if matches(&self.excludes) {
            return false;
        }
        self.includes_everything() || matches(&self.includes)
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

/// Whether `text` matches the glob `pattern`: `*` (any run of characters), `?` (one), `[abc]`,
/// `[a-z]`, `[!abc]`, `{a,b}` (alternatives, which may hold globs) and `\` (escape). A malformed
/// pattern matches nothing, as in Velero, where it fails to compile.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    glob_matches_separated(pattern, text, None)
}

/// [`glob_matches`] with gobwas/glob's separator: `*` and `?` stop at `separator`, `**` crosses it
/// (Velero compiles a resource modifier's `groupResource` with `.`, so `*.apps` is not `a.b.apps`).
pub fn glob_matches_separated(pattern: &str, text: &str, separator: Option<char>) -> bool {
    let text: Vec<char> = text.chars().collect();
    expand_alternatives(pattern, 0)
        .unwrap_or_default()
        .iter()
        .any(|alternative| {
            let pattern: Vec<char> = alternative.chars().collect();
            matches_from(&pattern, &text, separator).unwrap_or(false)
        })
}

/// Patterns without `{...}`: one per combination of alternatives (at most a few hundred, so a
/// hostile pattern cannot explode); None when a brace is unbalanced.
fn expand_alternatives(pattern: &str, depth: usize) -> Option<Vec<String>> {
    const MAX: usize = 256;
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    let mut open = None;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '{' => {
                open = Some(i);
                break;
            }
            '}' => return None,
            _ => {}
        }
        i += 1;
    }
    let Some(open) = open else {
        return Some(vec![pattern.to_string()]);
    };
    let (mut level, mut parts, mut start, mut close) = (0, Vec::new(), open + 1, None);
    let mut j = open + 1;
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 1,
            '{' => level += 1,
            '}' if level == 0 => {
                parts.push(chars[start..j].iter().collect::<String>());
                close = Some(j);
                break;
            }
            '}' => level -= 1,
            ',' if level == 0 => {
                parts.push(chars[start..j].iter().collect::<String>());
                start = j + 1;
            }
            _ => {}
        }
        j += 1;
    }
    let close = close?;
    if depth > 8 {
        return None;
    }
    let prefix: String = chars[..open].iter().collect();
    let suffix: String = chars[close + 1..].iter().collect();
    let mut out = Vec::new();
    for part in parts {
        for expanded in expand_alternatives(&format!("{prefix}{part}{suffix}"), depth + 1)? {
            out.push(expanded);
            if out.len() > MAX {
                return None;
            }
        }
    }
    Some(out)
}

/// Matches a pattern without alternatives; None when a class is unclosed or an escape dangles.
fn matches_from(pattern: &[char], text: &[char], separator: Option<char>) -> Option<bool> {
    // Iterative with one backtrack point for the last `*`: linear in practice, never exponential.
    let (mut p, mut t) = (0, 0);
    // The last star: where it is, where its match ends, how wide it is (`**` is 2).
    let mut star: Option<(usize, usize, usize)> = None;
    let crosses = |width: usize, c: char| width == 2 || separator != Some(c);
    loop {
        if p < pattern.len() {
            match pattern[p] {
                '*' => {
                    let width = if pattern.get(p + 1) == Some(&'*') {
                        2
                    } else {
                        1
                    };
                    star = Some((p, t, width));
                    p += width;
                    continue;
                }
                '?' if t < text.len() && separator != Some(text[t]) => {
                    p += 1;
                    t += 1;
                    continue;
                }
                '[' if t < text.len() => {
                    let (matched, next) = class(pattern, p, text[t])?;
                    if matched {
                        p = next;
                        t += 1;
                        continue;
                    }
                }
                '\\' => {
                    let literal = *pattern.get(p + 1)?;
                    if t < text.len() && text[t] == literal {
                        p += 2;
                        t += 1;
                        continue;
                    }
                }
                literal
                    if t < text.len() && literal != '?' && literal != '[' && text[t] == literal =>
                {
                    p += 1;
                    t += 1;
                    continue;
                }
                '[' => {
                    class(pattern, p, ' ')?;
                }
                _ => {}
            }
        } else if t == text.len() {
            return Some(true);
        }
        match star {
            Some((star_p, star_t, width))
                if star_t < text.len() && crosses(width, text[star_t]) =>
            {
                star = Some((star_p, star_t + 1, width));
                p = star_p + width;
                t = star_t + 1;
            }
            _ => {
                // The rest of the pattern must still be well formed.
                return pattern[p..]
                    .iter()
                    .position(|c| *c == '[')
                    .map_or(Some(false), |at| class(pattern, p + at, ' ').map(|_| false));
            }
        }
    }
}

/// A character class at `pattern[start] == '['`: whether `c` is in it, and where it ends.
fn class(pattern: &[char], start: usize, c: char) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negated = pattern.get(i) == Some(&'!');
    if negated {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let current = *pattern.get(i)?;
        if current == ']' && !first {
            return Some((matched != negated, i + 1));
        }
        first = false;
        if pattern.get(i + 1) == Some(&'-') && pattern.get(i + 2).is_some_and(|e| *e != ']') {
            let end = pattern[i + 2];
            matched |= (current..=end).contains(&c);
            i += 3;
        } else {
            matched |= current == c;
            i += 1;
        }
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

/// Which items a backup or a restore takes by their labels: Velero's `labelSelector`, or its
/// `orLabelSelectors` (an item matching any of them). Velero refuses both at once.
#[derive(Clone, Debug, Default)]
pub struct LabelSelection {
    /// Empty: every item.
    any_of: Vec<Selector>,
}

impl LabelSelection {
    /// The spec's selection; each error found (both fields set, a selector that does not parse)
    /// goes into `errors`, in Velero's words where it has them. `kind` is `backup` or `restore`.
    pub fn read(
        single: Option<&LabelSelector>,
        any_of: Option<&[LabelSelector]>,
        kind: &str,
        errors: &mut Vec<String>,
    ) -> LabelSelection {
        if single.is_some() && any_of.is_some() {
            errors.push(format!(
                "encountered labelSelector as well as orLabelSelectors in {kind} spec, only one \
                 can be specified"
            ));
        }
        let mut read = |selector: &LabelSelector, field: String| {
            Selector::try_from(selector.clone())
                .map_err(|error| errors.push(format!("{field}: {error}")))
                .ok()
        };
        let any_of: Vec<Selector> = match (single, any_of) {
            (Some(single), _) => read(single, "labelSelector".into()).into_iter().collect(),
            (None, Some(any_of)) => any_of
                .iter()
                .enumerate()
                .filter_map(|(i, s)| read(s, format!("orLabelSelectors[{i}]")))
                .collect(),
            (None, None) => Vec::new(),
        };
        LabelSelection { any_of }
    }

    /// Whether the spec selects items by their labels at all.
    pub fn by_labels(&self) -> bool {
        !self.any_of.is_empty()
    }

    /// The one selector a list request can carry, when there is exactly one: the API server
    /// cannot OR selectors, so `orLabelSelectors` are matched here ([`matches`](Self::matches)).
    pub fn for_listing(&self) -> Option<&Selector> {
        match self.any_of.as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }

    /// Whether an item with `labels` is taken.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.any_of.is_empty() || self.any_of.iter().any(|s| s.matches(labels))
    }
}

/// Which resources a backup takes: Velero's two kinds of resource filters, which it refuses to mix
/// (`pkg/util/collections/includes_excludes.go`: `GlobalIncludesExcludes`, `ScopeIncludesExcludes`).
#[derive(Clone, Debug)]
pub enum ResourceFilter {
    /// `includedResources`, `excludedResources` and `includeClusterResources`.
    Global {
        resources: IncludesExcludes,
        include_cluster_resources: Option<bool>,
    },
    /// `included`/`excludedNamespaceScopedResources` and `included`/`excludedClusterScopedResources`.
    Scoped {
        namespaced: IncludesExcludes,
        cluster: IncludesExcludes,
    },
}

impl ResourceFilter {
    /// Whether items of a resource going by `names` may be in the backup at all: listed, or
    /// named by another item.
    pub fn admits(&self, names: &[&str], namespaced: bool) -> bool {
        match self {
            ResourceFilter::Global { resources, .. } => resources.should_include_any(names),
            ResourceFilter::Scoped {
                namespaced: filter, ..
            } if namespaced => filter.should_include_any(names),
            ResourceFilter::Scoped { cluster, .. } => !cluster.excludes_any(names),
        }
    }

    /// Whether a cluster-scoped resource the filter admits is listed, not only taken when another
    /// item names it. Old filters: as `includeClusterResources` says, or when unset only when every
    /// namespace is backed up. Scoped filters: only when included by name. (Velero's rule also
    /// lists every cluster-scoped resource of a backup with no cluster-scoped filter, of every
    /// namespace and every namespaced resource; but its backup controller always adds
    /// VolumeSnapshotContents to the cluster-scoped excludes first, so that rule never applies.)
    pub fn lists_cluster_scoped(&self, names: &[&str], namespaces: &IncludesExcludes) -> bool {
        match self {
            ResourceFilter::Global {
                include_cluster_resources,
                ..
            } => include_cluster_scoped(*include_cluster_resources, namespaces),
            ResourceFilter::Scoped { cluster, .. } => {
                !cluster.includes.is_empty() && cluster.should_include_any(names)
            }
        }
    }

    /// Whether cluster-scoped items other items name are taken (`includeClusterResources: false`
    /// leaves them out).
    pub fn takes_named_cluster_scoped(&self) -> bool {
        match self {
            ResourceFilter::Global {
                include_cluster_resources,
                ..
            } => *include_cluster_resources != Some(false),
            ResourceFilter::Scoped { .. } => true,
        }
    }

    /// The filter without the entries that name a resource of the other scope only (`pods` among
    /// the cluster-scoped ones), which Velero drops as it resolves them; `scope_of` says, for a
    /// name, whether the cluster serves it as namespaced (`Some(true)`), cluster-scoped, or not at
    /// all.
    pub fn resolved(self, scope_of: impl Fn(&str) -> Option<bool>) -> ResourceFilter {
        match self {
            ResourceFilter::Scoped {
                namespaced,
                cluster,
            } => ResourceFilter::Scoped {
                namespaced: namespaced.without(|name| scope_of(name) == Some(false)),
                cluster: cluster.without(|name| scope_of(name) == Some(true)),
            },
            global => global,
        }
    }
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

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn selector(pairs: &[(&str, &str)]) -> LabelSelector {
        LabelSelector {
            match_labels: Some(labels(pairs)),
            ..Default::default()
        }
    }

    #[test]
    fn a_policy_s_lists_join_the_backup_s_unless_it_names_them_already() {
        let strings = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let own = IncludesExcludes::new(list(&["deploy*"]).as_ref(), list(&["secrets"]).as_ref());
        let combined = own.combined_with(
            &strings(&["configmaps", "secrets"]),
            &strings(&["deployments", "pods"]),
        );
        // deployments: the backup includes them; secrets: it excludes them. Its own word holds.
        assert_eq!(combined.includes, ["deploy*", "configmaps"]);
        assert_eq!(combined.excludes, ["secrets", "pods"]);
        assert!(combined.should_include("deployments") && !combined.should_include("pods"));
    }

    #[test]
    fn or_label_selectors_take_an_item_matching_any_and_refuse_a_single_selector_beside_them() {
        let mut errors = Vec::new();
        let any = [selector(&[("app", "db")]), selector(&[("tier", "cache")])];
        let selection = LabelSelection::read(None, Some(&any), "backup", &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        assert!(selection.by_labels());
        assert!(
            selection.for_listing().is_none(),
            "two selectors: matched here"
        );
        assert!(selection.matches(&labels(&[("app", "db")])));
        assert!(selection.matches(&labels(&[("tier", "cache"), ("x", "y")])));
        assert!(!selection.matches(&labels(&[("app", "web")])));

        let single = selector(&[("app", "db")]);
        let one = LabelSelection::read(Some(&single), None, "backup", &mut errors);
        assert!(
            one.for_listing().is_some(),
            "one selector: the API server applies it"
        );
        assert!(!LabelSelection::read(None, None, "backup", &mut errors).by_labels());
        assert!(errors.is_empty());

        LabelSelection::read(Some(&single), Some(&any), "restore", &mut errors);
        assert_eq!(
            errors,
            [
                "encountered labelSelector as well as orLabelSelectors in restore spec, only one \
              can be specified"
            ]
        );
    }

    #[test]
    fn scoped_filters_as_velero_applies_them() {
        let scoped = |ns_in: &[&str], ns_out: &[&str], cl_in: &[&str], cl_out: &[&str]| {
            ResourceFilter::Scoped {
                namespaced: IncludesExcludes::new(list(ns_in).as_ref(), list(ns_out).as_ref()),
                cluster: IncludesExcludes::new(list(cl_in).as_ref(), list(cl_out).as_ref()),
            }
        };
        let all = IncludesExcludes::new(None, None);
        let secrets = ["secrets", "secrets", "secret"];
        let roles = [
            "clusterroles",
            "clusterroles.rbac.authorization.k8s.io",
            "clusterrole",
        ];
        // Namespaced: every one unless excluded, or only those included.
        let no_secrets = scoped(&[], &["secrets"], &[], &[]);
        assert!(!no_secrets.admits(&secrets, true));
        assert!(no_secrets.admits(&["configmaps"], true));
        // Cluster-scoped: listed only when included by name, taken when named unless excluded.
        assert!(!no_secrets.lists_cluster_scoped(&roles, &all));
        assert!(no_secrets.admits(&roles, false));
        let with_roles = scoped(&[], &[], &["clusterroles"], &[]);
        assert!(with_roles.lists_cluster_scoped(&roles, &all));
        assert!(!with_roles.lists_cluster_scoped(&["storageclasses"], &all));
        let every = scoped(&[], &[], &["*"], &["storageclasses"]);
        assert!(every.lists_cluster_scoped(&roles, &all));
        assert!(!every.admits(&["storageclasses"], false));
        // A name of the other scope is dropped, as Velero drops it when it resolves the lists.
        let misplaced =
            scoped(&["clusterroles"], &[], &["pods"], &[]).resolved(|name| Some(name == "pods"));
        assert!(
            misplaced.admits(&["configmaps"], true),
            "no namespaced include left"
        );
        assert!(!misplaced.lists_cluster_scoped(&roles, &all));
        // Velero's validation of a scoped list.
        let bad = IncludesExcludes::new(list(&["*", "pods"]).as_ref(), list(&["*"]).as_ref());
        assert_eq!(
            bad.validate_scoped("namespace-scoped"),
            [
                "Invalid namespace-scoped included/excluded resource lists: includes list must \
                 either contain '*' only, or a non-empty list of items",
                "Invalid namespace-scoped included/excluded resource lists: when exclude is '*', \
                 include cannot have value",
                "Invalid namespace-scoped included/excluded resource lists: excludes list cannot \
                 contain an item in the includes list: *",
            ]
        );
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
    fn namespaces_match_as_velero_s_globs() {
        let filter =
            IncludesExcludes::new(list(&["shop-*"]).as_ref(), list(&["shop-test?"]).as_ref());
        assert!(filter.should_include("shop-a"));
        assert!(filter.should_include("shop-x.y"));
        assert!(!filter.should_include("shop-test1"));
        assert!(filter.should_include("shop-test12"));
        assert!(!filter.should_include("shop"));
        let names = ["shop-a".to_string(), "db".to_string()];
        let wanted = IncludesExcludes::new(list(&["shop-*", "web-*", "db", "*"]).as_ref(), None);
        assert_eq!(
            wanted.unmatched_includes(&names).collect::<Vec<_>>(),
            ["web-*"]
        );
    }

    #[test]
    fn globs() {
        for (pattern, text, expected) in [
            ("*", "", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("?at", "cat", true),
            ("?at", "at", false),
            ("[cb]at", "bat", true),
            ("[!cb]at", "bat", false),
            ("[a-c]x", "bx", true),
            ("[a-c]x", "dx", false),
            ("{shop,web}-*", "web-1", true),
            ("{shop,web}-*", "db-1", false),
            ("{a,{b,c}}d", "cd", true),
            ("\\*", "*", true),
            ("\\*", "x", false),
            ("[abc", "a", false),
            ("{a,b", "a", false),
            ("a}", "a}", false),
            ("x*[", "xy", false),
        ] {
            assert_eq!(
                glob_matches(pattern, text),
                expected,
                "{pattern:?} ~ {text:?}"
            );
        }
        // A pattern of many stars against a long text stays fast (no exponential backtracking).
        assert!(!glob_matches(&"*a".repeat(50), &"a".repeat(49)));
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
