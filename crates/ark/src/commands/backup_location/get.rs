use std::process::ExitCode;

use ark_api::BackupStorageLocation;

use crate::cli::args::{GetArgs, GlobalArgs};
use crate::output;

pub async fn run(global: &GlobalArgs, args: GetArgs) -> anyhow::Result<ExitCode> {
    crate::commands::lookup::get::<BackupStorageLocation>(
        global,
        args,
        "backup storage location",
        table,
    )
    .await
}

fn table(locations: &[BackupStorageLocation], columns: output::ObjectColumns) -> String {
    output::table(
        &columns.headers(&[
            "NAME",
            "PROVIDER",
            "BUCKET/PREFIX",
            "PHASE",
            "LAST VALIDATED",
            "ACCESS MODE",
            "DEFAULT",
        ]),
        locations.iter().map(|location| {
            let spec = &location.spec;
            let status = location.status.clone().unwrap_or_default();
            let bucket = match &spec.object_storage.prefix {
                Some(prefix) => format!("{}/{prefix}", spec.object_storage.bucket),
                None => spec.object_storage.bucket.clone(),
            };
            let row = vec![
                location.metadata.name.clone().unwrap_or_default(),
                spec.provider.clone(),
                bucket,
                status.phase.map_or("Unknown".into(), |p| format!("{p:?}")),
                output::time(status.last_validation_time.as_ref()),
                if location.is_read_only() {
                    "ReadOnly"
                } else {
                    "ReadWrite"
                }
                .into(),
                if spec.default { "true" } else { "" }.into(),
            ];
            columns.row(&location.metadata, row)
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_api::{BackupStorageLocationSpec, ObjectStorageLocation};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn location_table() {
        let location = |name: &str, prefix: Option<&str>, default: bool| {
            BackupStorageLocation::new(
                name,
                BackupStorageLocationSpec {
                    provider: "aws".into(),
                    object_storage: ObjectStorageLocation {
                        bucket: "backups".into(),
                        prefix: prefix.map(Into::into),
                        ..Default::default()
                    },
                    default,
                    ..Default::default()
                },
            )
        };
        let mut primary = location("default", Some("prod"), true);
        primary.metadata.creation_timestamp = Some(Time(at("2024-01-01T00:00:00Z")));
        let spare = location("spare", None, false);
        let columns = output::ObjectColumns {
            now: at("2026-03-03T00:00:00Z"),
            show_labels: false,
        };
        insta::assert_snapshot!(table(&[primary, spare], columns), @r"
        NAME     PROVIDER  BUCKET/PREFIX  PHASE    LAST VALIDATED  ACCESS MODE  DEFAULT  AGE
        default  aws       backups/prod   Unknown  <none>          ReadWrite    true     2y62d
        spare    aws       backups        Unknown  <none>          ReadWrite             <none>
        ");
    }
}
