//! Paths inside a backup tarball, in Velero's format (version 1.1.0).

/// Content of `metadata/version`.
pub const FORMAT_VERSION: &str = "1.1.0";
pub const VERSION_ENTRY: &str = "metadata/version";

/// `pods`, `deployments.apps`: Velero's name for a resource of a group.
pub fn group_resource(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// Where an item lives: `resources/<gr>/namespaces/<ns>/<name>.json` or `resources/<gr>/cluster/<name>.json`.
pub fn item_path(group_resource: &str, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("resources/{group_resource}/namespaces/{ns}/{name}.json"),
        None => format!("resources/{group_resource}/cluster/{name}.json"),
    }
}

/// Suffix of the folder of the preferred version's copies (Velero's `PreferredVersionDir`).
pub const PREFERRED_VERSION_SUFFIX: &str = "-preferredversion";

/// The copy of an item under its preferred version: `resources/<gr>/<version>-preferredversion/...`.
pub fn preferred_version_path(
    group_resource: &str,
    version: &str,
    namespace: Option<&str>,
    name: &str,
) -> String {
    let folder = format!("{version}{PREFERRED_VERSION_SUFFIX}");
    version_path(group_resource, &folder, namespace, name)
}

/// The copy of an item in the version folder `folder`: `resources/<gr>/<folder>/...`. A backup
/// of every served version (Velero's `EnableAPIGroupVersions`) writes the other versions' copies
/// in folders named by the bare version.
pub fn version_path(
    group_resource: &str,
    folder: &str,
    namespace: Option<&str>,
    name: &str,
) -> String {
    let scope = match namespace {
        Some(ns) => format!("namespaces/{ns}"),
        None => "cluster".to_string(),
    };
    format!("resources/{group_resource}/{folder}/{scope}/{name}.json")
}

/// An item entry of a tarball, parsed back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemEntry {
    pub group_resource: String,
    pub namespace: Option<String>,
    pub name: String,
}

/// Parses the main copy of an item; `None` for preferred-version copies and anything else.
pub fn parse_item_path(path: &str) -> Option<ItemEntry> {
    let parts: Vec<&str> = path.trim_start_matches("./").split('/').collect();
    let name = |file: &str| file.strip_suffix(".json").map(str::to_string);
    match parts.as_slice() {
        ["resources", gr, "namespaces", ns, file] => Some(ItemEntry {
            group_resource: gr.to_string(),
            namespace: Some(ns.to_string()),
            name: name(file)?,
        }),
        ["resources", gr, "cluster", file] => Some(ItemEntry {
            group_resource: gr.to_string(),
            namespace: None,
            name: name(file)?,
        }),
        _ => None,
    }
}

/// A version copy of an item, parsed back: the item, and its version folder (`v1beta1`,
/// `v1-preferredversion`). `None` for main copies and anything else.
pub fn parse_version_path(path: &str) -> Option<(ItemEntry, String)> {
    let parts: Vec<&str> = path.trim_start_matches("./").split('/').collect();
    let (gr, folder, rest) = match parts.as_slice() {
        ["resources", gr, folder, rest @ ..] if !matches!(*folder, "namespaces" | "cluster") => {
            (gr, folder, rest)
        }
        _ => return None,
    };
    let (namespace, file) = match rest {
        ["namespaces", ns, file] => (Some(ns.to_string()), file),
        ["cluster", file] => (None, file),
        _ => return None,
    };
    let entry = ItemEntry {
        group_resource: gr.to_string(),
        namespace,
        name: file.strip_suffix(".json")?.to_string(),
    };
    Some((entry, folder.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_paths_round_trip() {
        let gr = group_resource("apps", "deployments");
        assert_eq!(gr, "deployments.apps");
        let path = item_path(&gr, Some("shop"), "web");
        assert_eq!(path, "resources/deployments.apps/namespaces/shop/web.json");
        assert_eq!(
            parse_item_path(&path),
            Some(ItemEntry {
                group_resource: gr.clone(),
                namespace: Some("shop".into()),
                name: "web".into()
            })
        );
        let ns = item_path("namespaces", None, "shop");
        assert_eq!(ns, "resources/namespaces/cluster/shop.json");
        assert_eq!(parse_item_path(&ns).unwrap().namespace, None);
        let copy = preferred_version_path(&gr, "v1", Some("shop"), "web");
        assert_eq!(
            copy,
            "resources/deployments.apps/v1-preferredversion/namespaces/shop/web.json"
        );
        assert_eq!(parse_item_path(&copy), None);
        assert_eq!(
            parse_version_path(&copy),
            Some((
                parse_item_path(&path).unwrap(),
                "v1-preferredversion".into()
            ))
        );
        let other = version_path("namespaces", "v1beta1", None, "shop");
        assert_eq!(other, "resources/namespaces/v1beta1/cluster/shop.json");
        assert_eq!(
            parse_version_path(&other),
            Some((parse_item_path(&ns).unwrap(), "v1beta1".into()))
        );
        assert_eq!(parse_version_path(&path), None);
        assert_eq!(parse_item_path("metadata/version"), None);
    }
}
