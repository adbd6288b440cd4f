//! Which version of each resource a restore reads, when its backup holds every version the source
//! cluster served (Velero's `EnableAPIGroupVersions`): Velero's priorities, as
//! `pkg/restore/prioritize_group_version.go` has them in v1.18. The users' own priorities first
//! (the ConfigMap `enableapigroupversions`), then the target cluster's preferred version if the
//! backup holds it, then the backup's preferred version if the target serves it, then the first
//! common version, and the backup's preferred version when there is none.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ark_storage::tarball::PREFERRED_VERSION_SUFFIX;
use kube::core::Version;

use super::extract::child_dirs;
use crate::domain::discovery::GroupVersions;

/// The ConfigMap, in the server's namespace, of the users' own priorities (Velero's name).
pub const USER_PRIORITIES_CONFIG_MAP: &str = "enableapigroupversions";
/// Its key: lines of `<resource>.<group>=<version>,<version>...`.
pub const USER_PRIORITIES_KEY: &str = "restoreResourcesVersionPriority";

/// The users' version priorities, by group-resource, and the lines that could not be read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserPriorities {
    by_resource: BTreeMap<String, Vec<String>>,
    /// Each line passed over, with why (Velero passes over them in silence).
    pub ignored: Vec<String>,
}

impl UserPriorities {
    /// Velero's reading: spaces removed, blank lines skipped, a line without exactly one `=` or
    /// with nothing on one side of it passed over.
    pub fn parse(data: &str) -> UserPriorities {
        let mut priorities = UserPriorities::default();
        for line in data.lines() {
            let line: String = line.chars().filter(|c| *c != ' ').collect();
            if line.is_empty() {
                continue;
            }
            let Some((resource, versions)) = line.split_once('=') else {
                priorities.ignored.push(format!(
                    "{USER_PRIORITIES_KEY} line {line:?}: it must have one and only one equal sign"
                ));
                continue;
            };
            if versions.contains('=') {
                priorities.ignored.push(format!(
                    "{USER_PRIORITIES_KEY} line {line:?}: it must have one and only one equal sign"
                ));
            } else if resource.is_empty() || versions.is_empty() {
                priorities.ignored.push(format!(
                    "{USER_PRIORITIES_KEY} line {line:?}: it must name a resource before the \
                     equal sign and versions after it"
                ));
            } else {
                let versions = versions.split(',').map(str::to_string).collect();
                priorities
                    .by_resource
                    .insert(resource.to_string(), versions);
            }
        }
        priorities
    }
}

/// The versions a backup holds of one resource, as its folders say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackedUpVersions {
    /// The version of its `<version>-preferredversion` folder.
    pub preferred: Option<String>,
    /// Every version, by Kubernetes' version priority.
    pub versions: Vec<String>,
}

impl BackedUpVersions {
    pub fn from_folders<'a>(folders: impl IntoIterator<Item = &'a str>) -> BackedUpVersions {
        let mut held = BackedUpVersions::default();
        for folder in folders {
            if matches!(folder, "namespaces" | "cluster") {
                continue;
            }
            let version = match folder.strip_suffix(PREFERRED_VERSION_SUFFIX) {
                Some(version) => {
                    held.preferred = Some(version.to_string());
                    version
                }
                None => folder,
            };
            held.versions.push(version.to_string());
        }
        // Stable, as Velero's sort, and highest priority first.
        held.versions
            .sort_by_key(|v| std::cmp::Reverse(Version::parse(v).priority()));
        held
    }
}

/// The version a restore reads a resource's items in, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chosen {
    pub version: String,
    /// The backup's folder of that version's copies.
    pub folder: String,
    pub why: &'static str,
}

impl Chosen {
    /// Whether the chosen copies are the preferred version's, which are the main copies.
    pub fn is_main_copy(&self) -> bool {
        self.folder.ends_with(PREFERRED_VERSION_SUFFIX)
    }
}

/// The version of `gr` a restore reads, by Velero's priorities; None when the backup has no
/// preferred version's folder of it (the main copies are read, as without the feature).
pub fn choose(
    gr: &str,
    backed_up: &BackedUpVersions,
    target: Option<&GroupVersions>,
    user: &UserPriorities,
) -> Option<Chosen> {
    let source_preferred = backed_up.preferred.as_deref()?;
    let chosen = |version: &str, why| Chosen {
        version: version.to_string(),
        folder: match version == source_preferred {
            true => format!("{version}{PREFERRED_VERSION_SUFFIX}"),
            false => version.to_string(),
        },
        why,
    };
    let default = chosen(
        source_preferred,
        "the backup's preferred version: no other is served by this cluster and held by the backup",
    );
    let Some(target) = target.filter(|t| !t.versions.is_empty()) else {
        return Some(chosen(
            source_preferred,
            "the backup's preferred version: this cluster does not serve the group",
        ));
    };
    let held = |version: &str| backed_up.versions.iter().any(|v| v == version);
    let served = |version: &str| target.versions.iter().any(|v| v == version);
    if let Some(version) = (user.by_resource.get(gr).into_iter().flatten())
        .find(|version| served(version) && held(version))
    {
        return Some(chosen(version, "the users' priorities"));
    }
    if held(&target.preferred) {
        return Some(chosen(
            &target.preferred,
            "this cluster's preferred version, held by the backup",
        ));
    }
    if served(source_preferred) {
        return Some(chosen(
            source_preferred,
            "the backup's preferred version, served by this cluster",
        ));
    }
    // Velero passes over the first of each list (by priority) here, which the two checks above
    // took to be the preferred versions.
    let common = (target.versions.iter().skip(1))
        .find(|version| backed_up.versions.iter().skip(1).any(|v| v == *version));
    Some(match common {
        Some(version) => Chosen {
            version: version.clone(),
            folder: version.clone(),
            why: "the version of highest priority that this cluster serves and the backup holds",
        },
        None => default,
    })
}

/// The version each resource of the unpacked backup (`resources`, its folder) is read in.
pub fn choose_all(
    resources: &Path,
    target: &BTreeMap<String, GroupVersions>,
    user: &UserPriorities,
) -> BTreeMap<String, Chosen> {
    child_dirs(resources)
        .into_iter()
        .filter_map(|gr| {
            let folders = child_dirs(&resources.join(&gr));
            let backed_up = BackedUpVersions::from_folders(folders.iter().map(String::as_str));
            // `<resource>.<group>`; the core group's resources have no dot.
            let group = gr.split_once('.').map_or("", |(_, group)| group);
            let chosen = choose(&gr, &backed_up, target.get(group), user)?;
            Some((gr, chosen))
        })
        .collect()
}

/// Where an item of `gr` (its main copy at `main`, under `resources`) is read from.
pub fn copy_path(resources: &Path, gr: &str, chosen: &Chosen, main: &Path) -> PathBuf {
    let folder = resources.join(gr);
    match main.strip_prefix(&folder) {
        Ok(within) if !chosen.is_main_copy() => folder.join(&chosen.folder).join(within),
        _ => main.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(preferred: &str, versions: &[&str]) -> GroupVersions {
        GroupVersions {
            preferred: preferred.into(),
            versions: versions.iter().map(|v| v.to_string()).collect(),
        }
    }

    fn backed_up(folders: &[&str]) -> BackedUpVersions {
        BackedUpVersions::from_folders(folders.iter().copied())
    }

    fn version_and_folder(chosen: Option<Chosen>) -> (String, String) {
        let chosen = chosen.expect("a version chosen");
        (chosen.version, chosen.folder)
    }

    const GR: &str = "rockbands.music.example.io";

    #[test]
    fn the_backup_folders_say_its_versions_by_priority() {
        assert_eq!(
            backed_up(&[
                "namespaces",
                "v1alpha1",
                "v1-preferredversion",
                "v2beta1",
                "cluster"
            ]),
            BackedUpVersions {
                preferred: Some("v1".into()),
                versions: vec!["v1".into(), "v2beta1".into(), "v1alpha1".into()],
            }
        );
    }

    /// Velero's `TestK8sPrioritySort`.
    #[test]
    fn versions_are_sorted_by_kubernetes_priority_as_velero_sorts_them() {
        let folders = [
            "v2",
            "v11alpha2",
            "foo10",
            "v10",
            "v12alpha1",
            "v3beta1",
            "foo1",
            "v1",
            "v10beta3",
            "v11beta2",
        ];
        assert_eq!(
            backed_up(&folders).versions,
            [
                "v10",
                "v2",
                "v1",
                "v11beta2",
                "v10beta3",
                "v3beta1",
                "v12alpha1",
                "v11alpha2",
                "foo1",
                "foo10"
            ]
        );
    }

    /// Velero's cases (`prioritize_group_version_test.go`), each priority in turn.
    #[test]
    fn each_of_velero_s_priorities_in_turn() {
        let none = UserPriorities::default();
        let source = backed_up(&["v2beta2-preferredversion", "v2beta1", "v1"]);
        // Priority 1: the target's preferred version, held by the backup.
        let target = group("v2beta1", &["v2beta1", "v1"]);
        assert_eq!(
            version_and_folder(choose(GR, &source, Some(&target), &none)),
            ("v2beta1".into(), "v2beta1".into())
        );
        // The same version preferred on both sides: the preferred copies.
        let target = group("v2beta2", &["v2beta2", "v1"]);
        assert_eq!(
            version_and_folder(choose(GR, &source, Some(&target), &none)),
            ("v2beta2".into(), "v2beta2-preferredversion".into())
        );
        // Priority 2: the target's preferred is not held; the backup's preferred is served.
        let target = group("v3", &["v3", "v2beta2"]);
        assert_eq!(
            version_and_folder(choose(GR, &source, Some(&target), &none)),
            ("v2beta2".into(), "v2beta2-preferredversion".into())
        );
        // Priority 3: a common version other than the first of each list.
        let source = backed_up(&["v2-preferredversion", "v2beta1", "v1"]);
        let target = group("v3", &["v3", "v2beta1", "v1"]);
        assert_eq!(
            version_and_folder(choose(GR, &source, Some(&target), &none)),
            ("v2beta1".into(), "v2beta1".into())
        );
        // None in common: the backup's preferred version, as without the feature.
        let target = group("v4", &["v4", "v3"]);
        assert_eq!(
            version_and_folder(choose(GR, &source, Some(&target), &none)),
            ("v2".into(), "v2-preferredversion".into())
        );
        // A group the target does not serve (a definition the restore creates).
        assert_eq!(
            version_and_folder(choose(GR, &source, None, &none)),
            ("v2".into(), "v2-preferredversion".into())
        );
        // No preferred folder (a backup without the copies): nothing to choose.
        assert_eq!(choose(GR, &backed_up(&["v1"]), Some(&target), &none), None);
    }

    #[test]
    fn the_users_priorities_come_first_when_both_sides_have_the_version() {
        let user = UserPriorities::parse(
            "rockbands.music.example.io = v3, v1\n\norchestras.music.example.io=v2\n",
        );
        assert!(user.ignored.is_empty(), "{:?}", user.ignored);
        let source = backed_up(&["v2-preferredversion", "v1"]);
        let target = group("v2", &["v2", "v1"]);
        // v3 is served by neither: the next, v1, which both have.
        assert_eq!(
            version_and_folder(choose(GR, &source, Some(&target), &user)),
            ("v1".into(), "v1".into())
        );
        // Other resources keep Velero's order.
        assert_eq!(
            version_and_folder(choose("bands.example.io", &source, Some(&target), &user)),
            ("v2".into(), "v2-preferredversion".into())
        );
    }

    #[test]
    fn lines_velero_passes_over_are_named() {
        let user = UserPriorities::parse("a.b=v1=v2\nnoequal\n=v1\nc.d=\ne.f=v1\n");
        assert_eq!(user.by_resource.len(), 1);
        assert_eq!(user.ignored.len(), 4, "{:?}", user.ignored);
        assert!(
            user.ignored[0].contains("\"a.b=v1=v2\""),
            "{:?}",
            user.ignored
        );
    }

    #[test]
    fn another_version_s_copy_is_read_from_its_folder() {
        let resources = Path::new("/r/resources");
        let main = resources.join("gauges.example.com/namespaces/a/g.json");
        let other = Chosen {
            version: "v1beta1".into(),
            folder: "v1beta1".into(),
            why: "",
        };
        assert_eq!(
            copy_path(resources, "gauges.example.com", &other, &main),
            resources.join("gauges.example.com/v1beta1/namespaces/a/g.json")
        );
        let preferred = Chosen {
            folder: "v1-preferredversion".into(),
            ..other
        };
        assert_eq!(
            copy_path(resources, "gauges.example.com", &preferred, &main),
            main
        );
    }
}
