//! Velero's include/exclude rules for namespaces and resources, shared by backup, restore and
//! restore hooks. Each entry is a glob, as Velero compiles it (gobwas/glob without separators):
//! `shop-*` includes `shop-a` and `shop-x.y`.

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
