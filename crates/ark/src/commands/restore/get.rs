use std::process::ExitCode;

use ark_api::Restore;

use crate::cli::args::{GetArgs, GlobalArgs};
use crate::output;

pub async fn run(global: &GlobalArgs, args: GetArgs) -> anyhow::Result<ExitCode> {
    crate::commands::lookup::get::<Restore>(global, args, "restore", table).await
}

fn table(restores: &[Restore], columns: output::ObjectColumns) -> String {
    output::table(
        &columns.headers(&[
            "NAME",
            "BACKUP",
            "STATUS",
            "STARTED",
            "COMPLETED",
            "ERRORS",
            "WARNINGS",
            "CREATED",
        ]),
        restores.iter().map(|restore| {
            let status = restore.status.clone().unwrap_or_default();
            let row = vec![
                restore.metadata.name.clone().unwrap_or_default(),
                restore.spec.backup_name.clone(),
                format!("{:?}", restore.phase()),
                output::time(status.start_timestamp.as_ref()),
                output::time(status.completion_timestamp.as_ref()),
                status.errors.unwrap_or(0).to_string(),
                status.warnings.unwrap_or(0).to_string(),
                output::time(restore.metadata.creation_timestamp.as_ref()),
            ];
            columns.row(&restore.metadata, row)
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_api::{RestorePhase, RestoreSpec, RestoreStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn restore_table() {
        let mut restore = Restore::new(
            "copy",
            RestoreSpec {
                backup_name: "nightly".into(),
                ..Default::default()
            },
        );
        restore.metadata.creation_timestamp = Some(Time(at("2026-03-03T05:00:00Z")));
        restore.metadata.labels = Some([("team".to_string(), "shop".to_string())].into());
        restore.status = Some(RestoreStatus {
            phase: Some(RestorePhase::Completed),
            warnings: Some(1),
            start_timestamp: Some(Time(at("2026-03-03T05:00:01Z"))),
            completion_timestamp: Some(Time(at("2026-03-03T05:02:00Z"))),
            ..Default::default()
        });
        let columns = output::ObjectColumns {
            now: at("2026-03-03T05:07:30Z"),
            show_labels: true,
        };
        insta::assert_snapshot!(table(&[restore], columns), @r"
        NAME  BACKUP   STATUS     STARTED                        COMPLETED                      ERRORS  WARNINGS  CREATED                        AGE    LABELS
        copy  nightly  Completed  2026-03-03 05:00:01 +0000 UTC  2026-03-03 05:02:00 +0000 UTC  0       1         2026-03-03 05:00:00 +0000 UTC  7m30s  team=shop
        ");
    }
}
