//! The providers against real servers of their kind, as `scripts/cluster.sh up` starts them: S3
//! (SeaweedFS) and Azure Blob (Azurite). The same code path serves every provider (object_store);
//! these tests show each end to end, with Velero's configuration keys and credentials files. GCS
//! has no stand-in that speaks the XML API object_store uses (see the README): its credentials
//! are checked here, where no server is needed.

use crate::common;

use ark_api::{BackupStorageLocation, BackupStorageLocationPhase};
use ark_tests::{ArkServer, Cluster, fixtures, unique_name, wait_for};
use common::setup::WAIT;
use common::{ARK, ark_ok};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, PostParams};

/// Where the server finds a location's credentials.
enum Credentials {
    /// The Secret the location names (`--credential`).
    Secret,
    /// A file the server's environment variable names, the location naming no Secret: how
    /// `velero install` gives Velero's pod its credentials.
    FileNamedBy(&'static str),
}

/// A namespace with a ConfigMap backed up through `location` and restored after the ConfigMap was
/// deleted. The backup's keys are under the location's prefix in the named bucket or container.
async fn round_trip(cluster: &Cluster, location: ark_storage::Location, credentials: Credentials) {
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("app").await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &app.name);
    let kept: ConfigMap = fixtures::object(serde_json::json!({
        "metadata": { "name": "kept" }, "data": { "provider": location.provider },
    }));
    config_maps
        .create(&PostParams::default(), &kept)
        .await
        .unwrap();
    let secret = fixtures::CREDENTIALS_SECRET;
    let mut args = vec![
        "backup-location".to_string(),
        "create".into(),
        "default".into(),
        "--default".into(),
    ];
    let file = tempfile::NamedTempFile::new().unwrap();
    let env = match credentials {
        Credentials::Secret => {
            fixtures::credentials_secret(&client, &ns.name, secret, &location).await;
            args.extend(fixtures::location_flags(&location, secret));
            Vec::new()
        }
        Credentials::FileNamedBy(variable) => {
            std::fs::write(file.path(), location.credentials.as_deref().unwrap()).unwrap();
            args.extend(fixtures::location_flags_without_credential(&location));
            vec![(variable, file.path().to_str().unwrap())]
        }
    };
    ark_ok(
        cluster,
        &ns.name,
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let _server = ArkServer::start_with_env(ARK, cluster, &ns.name, &[], &env);

    let backup = [
        "backup",
        "create",
        "b1",
        "--include-namespaces",
        &app.name,
        "--wait",
    ];
    let output = ark_ok(cluster, &ns.name, &backup);
    assert!(
        output.contains("Backup completed with status: Completed."),
        "{output}"
    );
    let store = ark_storage::open(&location).unwrap();
    let metadata = store
        .get(&store.layout.backup_metadata("b1"))
        .await
        .unwrap();
    let uploaded: serde_json::Value = serde_json::from_slice(&metadata).unwrap();
    assert_eq!(uploaded["status"]["phase"], "Completed");

    config_maps
        .delete("kept", &DeleteParams::default())
        .await
        .unwrap();
    let gone = |c: Option<&ConfigMap>| c.is_none();
    wait_for(config_maps.clone(), "kept", gone, WAIT).await.ok();
    let restore = ["restore", "create", "r1", "--from-backup", "b1", "--wait"];
    let output = ark_ok(cluster, &ns.name, &restore);
    assert!(
        output.contains("Restore completed with status: Completed."),
        "{output}"
    );
    let restored = config_maps.get("kept").await.unwrap();
    assert_eq!(restored.data.unwrap()["provider"], location.provider);
}

#[tokio::test]
async fn a_backup_round_trips_through_s3() {
    let cluster = Cluster::get();
    let location = cluster.s3_location(&unique_name("s3"));
    round_trip(&cluster, location, Credentials::Secret).await;
}

#[tokio::test]
async fn a_backup_round_trips_through_azure_blob() {
    let cluster = Cluster::get();
    let location = cluster.azure_location(&unique_name("azure"));
    round_trip(&cluster, location, Credentials::Secret).await;
}

/// The regression behind locations made by `velero install` being Unavailable under ark, for
/// Azure: the location names no Secret; the file `AZURE_CREDENTIALS_FILE` names is read as Velero's
/// Azure plugin reads it. (S3's `AWS_SHARED_CREDENTIALS_FILE`:
/// `velero::interop::a_location_without_a_secret_uses_the_credentials_file_the_environment_names`.)
#[tokio::test]
async fn a_backup_round_trips_through_azure_blob_with_the_credentials_file_the_environment_names() {
    let cluster = Cluster::get();
    let location = cluster.azure_location(&unique_name("azure"));
    let file = Credentials::FileNamedBy("AZURE_CREDENTIALS_FILE");
    round_trip(&cluster, location, file).await;
}

/// Credentials given in part are refused with what is missing, on every provider, before any
/// request could fall back to the machine's own identity: the location is Unavailable with the
/// reason.
#[tokio::test]
async fn credentials_given_in_part_are_refused_by_name_on_every_provider() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let mut s3 = cluster.s3_location("partial");
    s3.credentials = Some("[default]\nrole_arn = arn:aws:iam::1:role/backup\n".into());
    let mut azure = cluster.azure_location("partial");
    azure.credentials = Some("AZURE_CLIENT_ID=c\nAZURE_CLIENT_SECRET=s\n".into());
    let gcs = ark_storage::Location {
        provider: "gcp".into(),
        bucket: cluster.s3_bucket.clone(),
        credentials: Some(r#"{"type": "external_account", "audience": "x"}"#.into()),
        ..Default::default()
    };
    let cases = [
        (
            "s3",
            s3,
            ": credentials: profile [default] needs aws_access_key_id and aws_secret_access_key",
        ),
        (
            "azure",
            azure,
            ": credentials: AZURE_CLIENT_SECRET is set without AZURE_TENANT_ID",
        ),
        (
            "gcs",
            gcs,
            " (bucket \"ark-test\"): Generic GCS error: GCP credential error: Unable to decode \
             service account file: missing field `private_key`",
        ),
    ];
    let locations: Api<BackupStorageLocation> = Api::namespaced(client.clone(), &ns.name);
    for (name, location, reason) in cases {
        let secret = format!("{name}-credentials");
        fixtures::credentials_secret(&client, &ns.name, &secret, &location).await;
        let flags = fixtures::location_flags(&location, &secret);
        let mut args = vec!["backup-location", "create", name];
        args.extend(flags.iter().map(String::as_str));
        ark_ok(&cluster, &ns.name, &args);
        let unavailable = |l: Option<&BackupStorageLocation>| {
            l.and_then(|l| l.status.as_ref()).and_then(|s| s.phase)
                == Some(BackupStorageLocationPhase::Unavailable)
        };
        let checked = wait_for(locations.clone(), name, unavailable, WAIT)
            .await
            .unwrap();
        let message = checked.status.unwrap().message.unwrap();
        let expected = format!("backup storage location {name:?}{reason}");
        assert!(message.starts_with(&expected), "{message}");
    }
}
