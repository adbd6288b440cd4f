//! Reading the objects a command names (or all those a selector matches), and `ark <noun> get`
//! on top of it, for every noun.

use std::process::ExitCode;

use crate::cli::args::{GetArgs, GlobalArgs, OutputFormat};

/// Objects the user asked for, and how many of the names they gave do not exist or cannot be read.
pub(crate) struct Found<K> {
    pub(crate) items: Vec<K>,
    pub(crate) missing: usize,
    /// Where a listing cut at its limit goes on (the API server's continue token).
    pub(crate) next: Option<String>,
}

impl<K> Found<K> {
    pub(crate) fn exit_code(&self) -> ExitCode {
        if self.missing == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }

    /// Keeps an object that fits ark's type; names one that does not on stderr, with the field.
    fn add(&mut self, name: Option<&str>, read: Result<K, ark_api::read::Unfit>, kind: &str) {
        match read {
            Ok(item) => self.items.push(item),
            Err(unfit) => {
                let name = name.unwrap_or_default();
                eprintln!("{kind} {name:?} cannot be read: {unfit}");
                self.missing += 1;
            }
        }
    }
}

/// One page of a listing, each object's JSON kept as it came, to be read as ark's type at once
/// (not through an untyped object and back).
#[derive(serde::Deserialize)]
struct Page {
    metadata: kube::core::ListMeta,
    items: Vec<Box<serde_json::value::RawValue>>,
}

/// The name of an object that does not fit ark's type, to say which one it is.
fn name_of(json: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Named {
        metadata: kube::core::ObjectMeta,
    }
    serde_json::from_str::<Named>(json).ok()?.metadata.name
}

/// kubectl's order for a list: by name.
fn sort_by_name<K: kube::Resource>(objects: &mut [K]) {
    objects.sort_by(|a, b| a.meta().name.cmp(&b.meta().name));
}

/// How many objects one request of a listing returns: a listing of thousands comes in pages.
const PAGE: u32 = 500;

/// Where a listing starts and how much of it is read: all of it, or `limit` objects from where an
/// earlier one left off.
#[derive(Clone, Copy, Default, PartialEq)]
pub(crate) struct Window<'a> {
    pub(crate) limit: Option<u32>,
    pub(crate) after: Option<&'a str>,
}

/// The named objects in the order given (each missing one reported by name on stderr), or all
/// matching the selector, by name.
/// Read one by one, so that an object ark's types cannot read is named and the others shown.
pub(crate) async fn get_named_or_listed<K>(
    client: &kube::Client,
    namespace: &str,
    names: &[String],
    selector: Option<&str>,
    kind: &str,
) -> anyhow::Result<Found<K>>
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    named_or_listed(client, namespace, names, selector, kind, Window::default()).await
}

/// The same, a listing read only within `window`.
async fn named_or_listed<K>(
    client: &kube::Client,
    namespace: &str,
    names: &[String],
    selector: Option<&str>,
    kind: &str,
    window: Window<'_>,
) -> anyhow::Result<Found<K>>
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    use anyhow::Context as _;
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        client.clone(),
        namespace,
        &kube::api::ApiResource::erase::<K>(&()),
    );
    let mut found = Found {
        items: Vec::new(),
        missing: 0,
        next: None,
    };
    if names.is_empty() {
        let mut params = kube::api::ListParams::default().limit(window.limit.unwrap_or(PAGE));
        if let Some(selector) = selector {
            params = params.labels(selector);
        }
        if let Some(after) = window.after {
            params = params.continue_token(after);
        }
        let path = K::url_path(&(), Some(namespace));
        loop {
            let request = kube::core::Request::new(&path).list(&params)?;
            let page: Page =
                (client.request(request).await).with_context(|| format!("cannot list {kind}s"))?;
            let first = found.items.len();
            for json in page.items.iter().map(|json| json.get()) {
                let read = ark_api::read::typed_json(json);
                let name = read.is_err().then(|| name_of(json)).flatten();
                found.add(name.as_deref(), read, kind);
            }
            sort_by_name(&mut found.items[first..]);
            let next = page.metadata.continue_.filter(|token| !token.is_empty());
            match (next, window.limit) {
                (Some(token), None) => params = params.continue_token(&token),
                (next, _) => {
                    found.next = next;
                    return Ok(found);
                }
            }
        }
    }
    if window != Window::default() {
        anyhow::bail!("--limit and --continue are for a listing, not for named {kind}s");
    }
    if selector.is_some() {
        anyhow::bail!("give either {kind} names or --selector, not both");
    }
    for name in names {
        match api
            .get_opt(name)
            .await
            .with_context(|| format!("cannot get {kind} {name:?}"))?
        {
            Some(object) => found.add(Some(name), ark_api::read::typed(&object), kind),
            None => {
                let suggestion = super::missing::suggestion(&api, name).await;
                eprintln!("{kind} {name:?} not found{suggestion}");
                found.missing += 1;
            }
        }
    }
    Ok(found)
}

/// `ark <noun> get`: the objects as `table` lays them out, or as JSON or YAML.
pub(super) async fn get<K>(
    global: &GlobalArgs,
    args: GetArgs,
    kind: &str,
    table: fn(&[K], crate::output::ObjectColumns) -> String,
) -> anyhow::Result<ExitCode>
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned + serde::Serialize,
{
    let client = crate::context::client(global).await?;
    let window = Window {
        limit: args.limit,
        after: args.continue_token.as_deref(),
    };
    let found: Found<K> = named_or_listed(
        &client,
        &global.namespace,
        &args.names,
        args.selector.as_deref(),
        kind,
        window,
    )
    .await?;
    match args.output.output {
        OutputFormat::Table => println!(
            "{}",
            table(
                &found.items,
                crate::output::ObjectColumns::now(args.show_labels)
            )
        ),
        format => crate::output::print_objects(format, &found.items, args.names.len() == 1)?,
    }
    if let (Some(next), Some(limit)) = (&found.next, args.limit) {
        eprintln!("More {kind}s follow: the next {limit} with --limit {limit} --continue {next}");
    }
    Ok(found.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_sorted_by_name() {
        let mut objects: Vec<_> = ["weekly", "b", "nightly", "a-1", "a"]
            .into_iter()
            .map(|name| ark_api::Backup::new(name, Default::default()))
            .collect();
        sort_by_name(&mut objects);
        let names: Vec<_> = objects
            .iter()
            .map(|o| o.metadata.name.as_deref().unwrap())
            .collect();
        assert_eq!(names, ["a", "a-1", "b", "nightly", "weekly"]);
    }

    #[test]
    fn a_listed_object_that_does_not_fit_is_named() {
        let odd = r#"{"apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": {"name": "odd"}, "spec": {"ttl": 3}}"#;
        let mut found = Found::<ark_api::Backup> {
            items: Vec::new(),
            missing: 0,
            next: None,
        };
        let read = ark_api::read::typed_json(odd);
        assert!(read.is_err());
        assert_eq!(name_of(odd).as_deref(), Some("odd"));
        found.add(name_of(odd).as_deref(), read, "backup");
        assert_eq!((found.items.len(), found.missing), (0, 1));
    }
}
