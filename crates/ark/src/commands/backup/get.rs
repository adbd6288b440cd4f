use std::process::ExitCode;

use ark_api::Backup;

use crate::cli::args::{GetArgs, GlobalArgs};
use crate::output;

pub async fn run(global: &GlobalArgs, args: GetArgs) -> anyhow::Result<ExitCode> {
    crate::commands::lookup::get::<Backup>(global, args, "backup", table).await
}

fn table(backups: &[Backup], columns: output::ObjectColumns) -> String {
    output::table(
        &columns.headers(&[
            "NAME",
            "STATUS",
            "ERRORS",
            "WARNINGS",
            "CREATED",
            "EXPIRES",
            "STORAGE LOCATION",
        ]),
        backups.iter().map(|backup| {
            let status = backup.status.clone().unwrap_or_default();
            let row = vec![
                backup.metadata.name.clone().unwrap_or_default(),
                status_text(backup),
                status.errors.unwrap_or(0).to_string(),
                status.warnings.unwrap_or(0).to_string(),
                output::time(backup.metadata.creation_timestamp.as_ref()),
                output::time(status.expiration.as_ref()),
                backup.spec.storage_location.clone().unwrap_or_default(),
            ];
            columns.row(&backup.metadata, row)
        }),
    )
}

/// The phase, and the last verification's outcome when there was one.
fn status_text(backup: &Backup) -> String {
    use ark_api::verification::{Outcome, Verification};
    let phase = format!("{:?}", backup.phase());
    match Verification::of(backup) {
        None => phase,
        Some(Ok(v)) if v.outcome == Outcome::Passed => format!("{phase}, verified"),
        Some(_) => format!("{phase}, verification failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_api::{BackupPhase, BackupSpec, BackupStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn backup_table() {
        let mut backup = Backup::new(
            "nightly",
            BackupSpec {
                storage_location: Some("default".into()),
                ..Default::default()
            },
        );
        backup.metadata.creation_timestamp = Some(Time(at("2026-03-01T02:00:00Z")));
        backup.metadata.labels = Some(
            [("schedule", "daily"), ("app", "shop")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .into(),
        );
        backup.status = Some(BackupStatus {
            phase: Some(BackupPhase::PartiallyFailed),
            errors: Some(2),
            expiration: Some(Time(at("2026-03-31T02:00:00Z"))),
            ..Default::default()
        });
        backup.metadata.annotations = Some(
            [(
                ark_api::verification::ANNOTATION.to_string(),
                r#"{"outcome":"Failed","at":"2026-03-03T05:00:00Z","data":false,"defects":1,"by":"ark-server"}"#.to_string(),
            )]
            .into(),
        );
        let fresh = Backup::new("fresh", BackupSpec::default());
        let columns = output::ObjectColumns {
            now: at("2026-03-03T05:30:00Z"),
            show_labels: false,
        };
        let backups = [backup, fresh];
        insta::assert_snapshot!(table(&backups, columns), @r"
        NAME     STATUS                                ERRORS  WARNINGS  CREATED                        EXPIRES                        STORAGE LOCATION  AGE
        nightly  PartiallyFailed, verification failed  2       0         2026-03-01 02:00:00 +0000 UTC  2026-03-31 02:00:00 +0000 UTC  default           2d3h
        fresh    New                                   0       0         <none>                         <none>                                           <none>
        ");
        let columns = output::ObjectColumns {
            show_labels: true,
            ..columns
        };
        insta::assert_snapshot!(table(&backups, columns), @r"
        NAME     STATUS                                ERRORS  WARNINGS  CREATED                        EXPIRES                        STORAGE LOCATION  AGE     LABELS
        nightly  PartiallyFailed, verification failed  2       0         2026-03-01 02:00:00 +0000 UTC  2026-03-31 02:00:00 +0000 UTC  default           2d3h    app=shop,schedule=daily
        fresh    New                                   0       0         <none>                         <none>                                           <none>  <none>
        ");
    }
}
