//! Building `describe` output in Velero's layout: `Key:  value` lines with aligned values.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

#[derive(Default)]
pub struct Describe {
    text: String,
}

impl Describe {
    pub fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    pub fn blank(&mut self) {
        self.text.push('\n');
    }

    pub fn field(&mut self, key: &str, value: &str) {
        self.line(&format!("{key}:  {value}"));
    }

    /// Several fields whose values line up.
    pub fn fields(&mut self, fields: &[(&str, String)]) {
        self.aligned("", fields);
    }

    /// Fields indented under a heading.
    pub fn nested(&mut self, fields: &[(&str, String)]) {
        self.aligned("  ", fields);
    }

    fn aligned(&mut self, indent: &str, fields: &[(&str, String)]) {
        let width = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (key, value) in fields {
            let pad = " ".repeat(width - key.len());
            self.line(&format!("{indent}{key}:{pad}  {value}"));
        }
    }

    pub fn metadata(&mut self, metadata: &ObjectMeta) {
        let map = |m: Option<&std::collections::BTreeMap<String, String>>| match m {
            Some(m) if !m.is_empty() => m
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("\n              "),
            _ => "<none>".to_string(),
        };
        self.fields(&[
            ("Name", metadata.name.clone().unwrap_or_default()),
            ("Namespace", metadata.namespace.clone().unwrap_or_default()),
            ("Labels", map(metadata.labels.as_ref())),
            ("Annotations", map(metadata.annotations.as_ref())),
        ]);
    }

    pub fn finish(self) -> String {
        self.text
    }
}

/// A label selector as users write it, or `<none>`.
pub fn selector(selector: Option<&ark_api::LabelSelector>) -> String {
    selector
        .cloned()
        .and_then(|s| kube::core::Selector::try_from(s).ok())
        .map(|s| s.to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "<none>".to_string())
}
