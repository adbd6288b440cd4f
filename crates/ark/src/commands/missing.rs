//! Naming an object that does not exist with the closest existing name, when there is one: a
//! typo in a backup's name is the commonest way to meet "not found".

use kube::Api;
use kube::api::ListParams;

/// `; did you mean "..."?` when an object of the kind `api` serves has a name close to `name`,
/// else nothing; a listing that fails only loses the suggestion.
pub async fn suggestion<K>(api: &Api<K>, name: &str) -> String
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let names: Vec<String> = match api.list_metadata(&ListParams::default()).await {
        Ok(list) => list
            .items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect(),
        Err(_) => Vec::new(),
    };
    closest(name, names.iter().map(String::as_str))
        .map(|close| format!("; did you mean {close:?}?"))
        .unwrap_or_default()
}

/// The object `name` (a `kind`: "backup") in `namespace`, or an error naming it, the namespace and
/// the closest existing name.
pub async fn get<K>(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    kind: &str,
) -> anyhow::Result<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    use anyhow::Context as _;
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    match api
        .get_opt(name)
        .await
        .with_context(|| format!("cannot look up {kind} {name:?}"))?
    {
        Some(object) => Ok(object),
        None => anyhow::bail!(
            "{kind} {name:?} not found in namespace {namespace:?}{}",
            suggestion(&api, name).await
        ),
    }
}

/// The candidate closest to `name` by edit distance, if it is close enough to be a typo: at most
/// one edit per four characters, and two at most.
pub fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let allowed = (name.chars().count() / 4).clamp(1, 2);
    candidates
        .map(|candidate| (distance(name, candidate), candidate))
        .filter(|(d, _)| *d <= allowed)
        .min()
        .map(|(_, candidate)| candidate)
}

/// Edit distance by characters, a swap of two neighbours counting as one edit (the optimal string
/// alignment distance): `nightyl` is one typo away from `nightly`.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_name_and_strangers_find_none() {
        let names = ["nightly", "nightly-2026", "weekly", "db"];
        let closest = |name| closest(name, names.into_iter());
        assert_eq!(closest("nightyl"), Some("nightly"));
        assert_eq!(closest("nigthly"), Some("nightly"));
        assert_eq!(closest("weeklyy"), Some("weekly"));
        assert_eq!(closest("dbb"), Some("db"));
        assert_eq!(closest("monthly"), None);
        assert_eq!(closest("x"), None);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("nightyl", "nightly"), 1);
    }
}
