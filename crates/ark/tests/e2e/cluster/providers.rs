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

/// S3 behind TLS with a CA of its own (an on-premises MinIO's usual setup): a location given the
/// CA (`ark backup-location create --cacert`, the location's `caCert`) is Available and takes a
/// backup; one without it is Unavailable, naming the certificate; one whose `caCertRef` names a
/// Secret holding the CA works too; a `--cacert` file that holds no certificate is refused by the
/// CLI, and a `caCert` that is not one makes its location Unavailable, naming `caCert`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_location_behind_a_private_ca_is_reached_with_its_ca_cert_and_refused_without() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let tls = ark_tests::tls::TlsProxy::start(cluster.s3_address()).await;
    let url = format!("https://127.0.0.1:{}", tls.address.port());
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("app").await;
    let (flags, location) =
        fixtures::s3_location(&cluster, &client, &ns.name, None, Some(&url)).await;
    let ca = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(ca.path(), &tls.ca_pem).unwrap();
    let not_a_certificate = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(not_a_certificate.path(), "just text\n").unwrap();
    let create = |name: &str, extra: &[&str]| {
        let mut args = vec!["backup-location", "create", name];
        args.extend(flags.iter().map(String::as_str));
        args.extend(extra);
        common::ark(Some(&cluster), &[&args[..], &["-n", &ns.name]].concat())
    };
    let with_ca = create(
        "default",
        &["--default", "--cacert", ca.path().to_str().unwrap()],
    );
    assert!(
        with_ca.status.success(),
        "{}",
        common::text(&with_ca.stderr)
    );
    assert!(create("no-ca", &[]).status.success());
    let refused = create(
        "bad-ca",
        &["--cacert", not_a_certificate.path().to_str().unwrap()],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        common::text(&refused.stderr).contains("not a PEM certificate bundle"),
        "{}",
        common::text(&refused.stderr)
    );
    // By reference, as Velero v1.18 has it; and a caCert that is no certificate, as kubectl may
    // write one.
    let ca_secret: k8s_openapi::api::core::v1::Secret = fixtures::object(serde_json::json!({
        "metadata": { "name": "s3-ca" }, "stringData": { "ca.pem": String::from_utf8_lossy(&tls.ca_pem) },
    }));
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), &ns.name)
        .create(&PostParams::default(), &ca_secret)
        .await
        .unwrap();
    let locations: Api<BackupStorageLocation> = Api::namespaced(client.clone(), &ns.name);
    for (name, storage) in [
        (
            "by-ref",
            serde_json::json!({ "caCertRef": { "name": "s3-ca", "key": "ca.pem" } }),
        ),
        (
            "garbage",
            serde_json::json!({ "caCert": "bm90IGEgY2VydGlmaWNhdGU=" }),
        ),
    ] {
        let mut copy = locations.get("no-ca").await.unwrap();
        copy.metadata = kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        };
        copy.status = None;
        let mut value = serde_json::to_value(&copy).unwrap();
        for (key, field) in storage.as_object().unwrap() {
            value["spec"]["objectStorage"][key] = field.clone();
        }
        locations
            .create(
                &PostParams::default(),
                &serde_json::from_value(value).unwrap(),
            )
            .await
            .unwrap();
    }
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let phase = |wanted: BackupStorageLocationPhase| {
        move |l: Option<&BackupStorageLocation>| {
            l.and_then(|l| l.status.as_ref())
                .and_then(|s| s.phase)
                .is_some_and(|p| p == wanted)
        }
    };
    for name in ["default", "by-ref"] {
        wait_for(
            locations.clone(),
            name,
            phase(BackupStorageLocationPhase::Available),
            WAIT,
        )
        .await
        .unwrap_or_else(|e| panic!("location {name}: {e:#}"));
    }
    for (name, reason) in [("no-ca", "certificate"), ("garbage", "caCert")] {
        let unavailable = wait_for(
            locations.clone(),
            name,
            phase(BackupStorageLocationPhase::Unavailable),
            WAIT,
        )
        .await
        .unwrap_or_else(|e| panic!("location {name}: {e:#}"));
        let message = unavailable.status.unwrap().message.unwrap_or_default();
        assert!(message.contains(reason), "{name}: {message}");
    }
    let output = ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
        ],
    );
    assert!(
        output.contains("Backup completed with status: Completed."),
        "{output}"
    );
    let store = ark_storage::open(&location).unwrap();
    assert!(store.backup_exists("b1").await.unwrap());
}
