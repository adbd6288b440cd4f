//! Bad input and faults: each gets a clear error naming the thing, and loses nothing.

use crate::common;

use std::time::Duration;

use ark_api::{Backup, BackupStorageLocation, Restore};
use ark_tests::{ArkServer, Cluster, fixtures, wait_for};
use common::{ARK, ark, ark_ok, text};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;

const WAIT: Duration = Duration::from_secs(60);

#[test]
fn invalid_names_selectors_and_durations_fail_before_anything_is_created() {
    // No cluster is reachable here: the arguments are refused before ark would look for one.
    let cases: [(&[&str], &str); 4] = [
        (
            &["backup", "create", "Nightly_1"],
            "invalid value 'Nightly_1' for '[NAME]': must be a DNS-1123 subdomain",
        ),
        (
            &["backup", "create", "b", "-l", "app=we b"],
            "invalid value 'app=we b' for '--selector <SELECTOR>': \"we b\": must be at most 63 characters",
        ),
        (
            &["backup", "create", "b", "--ttl", "5 minutes"],
            "invalid value '5 minutes' for '--ttl <DURATION>': invalid duration \"5 minutes\"",
        ),
        (
            &[
                "restore",
                "create",
                "--from-backup",
                "b",
                "--namespace-mappings",
                "a-b",
            ],
            "\"a-b\" is not OLD:NEW with two namespace names",
        ),
    ];
    for (args, message) in cases {
        let output = ark(None, args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

#[tokio::test]
async fn restoring_an_unknown_backup_is_refused_by_name() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let output = ark(
        Some(&cluster),
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "nope",
            "-n",
            &ns.name,
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        format!(
            "error: backup \"nope\" not found in namespace \"{}\"\n",
            ns.name
        )
    );
    let restores = Api::<Restore>::namespaced(client, &ns.name)
        .list(&Default::default())
        .await
        .unwrap();
    assert!(restores.items.is_empty());
}

#[tokio::test]
async fn an_unreachable_bucket_on_velero_crds_fails_the_backup_and_marks_the_location_unavailable()
{
    // The second cluster runs Velero's own CRDs: the location's status is written through the object.
    let cluster = Cluster::second();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "creds" },
        "stringData": { "cloud": ark_tests::aws_credentials_file("a", "b") },
    }))
    .unwrap();
    Api::<Secret>::namespaced(client.clone(), &ns.name)
        .create(&Default::default(), &secret)
        .await
        .unwrap();
    // Port 9 (discard) on loopback: nothing listens, every request is refused at once.
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup-location",
            "create",
            "default",
            "--provider",
            "aws",
            "--bucket",
            "nowhere",
            "--config",
            "region=us-east-1,s3Url=http://127.0.0.1:9,s3ForcePathStyle=true",
            "--credential",
            "creds=cloud",
        ],
    );
    let output = ark(
        Some(&cluster),
        &[
            "backup",
            "create",
            "b1",
            "--wait",
            "-n",
            &ns.name,
            "--include-namespaces",
            &ns.name,
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    assert!(text(&output.stdout).contains("Backup completed with status: Failed."));
    let backup = Api::<Backup>::namespaced(client.clone(), &ns.name)
        .get("b1")
        .await
        .unwrap();
    let reason = backup.status.unwrap().failure_reason.unwrap();
    assert!(
        reason.starts_with(
            "backup storage location \"default\": checking whether the backup already exists in object storage:"
        ),
        "{reason}"
    );
    assert!(reason.contains("127.0.0.1:9"), "{reason}");

    let locations: Api<BackupStorageLocation> = Api::namespaced(client.clone(), &ns.name);
    let unavailable = |l: Option<&BackupStorageLocation>| {
        l.and_then(|l| l.status.as_ref()).and_then(|s| s.phase)
            == Some(ark_api::BackupStorageLocationPhase::Unavailable)
    };
    let location = wait_for(locations, "default", unavailable, WAIT)
        .await
        .unwrap();
    let message = location.status.unwrap().message.unwrap();
    assert!(
        message.starts_with("backup storage location \"default\":"),
        "{message}"
    );

    // A backup to the location, still down, now fails validation with the reason.
    let output = ark(
        Some(&cluster),
        &[
            "backup",
            "create",
            "b2",
            "--wait",
            "-n",
            &ns.name,
            "--include-namespaces",
            &ns.name,
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    let backup = Api::<Backup>::namespaced(client.clone(), &ns.name)
        .get("b2")
        .await
        .unwrap();
    let status = backup.status.unwrap();
    assert_eq!(status.phase, Some(ark_api::BackupPhase::FailedValidation));
    let errors = status.validation_errors.unwrap();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].starts_with(
            "backup storage location \"default\" is Unavailable: backup storage location \"default\":"
        ),
        "{errors:?}"
    );
    assert!(errors[0].contains("127.0.0.1:9"), "{errors:?}");
}

#[tokio::test]
async fn a_read_only_location_is_never_written() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let bucket = tempfile::tempdir().unwrap();
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup-location",
            "create",
            "default",
            "--provider",
            "file",
            "--bucket",
            bucket.path().to_str().unwrap(),
            "--access-mode",
            "ReadOnly",
        ],
    );
    let output = ark(
        Some(&cluster),
        &[
            "backup",
            "create",
            "b1",
            "--wait",
            "-n",
            &ns.name,
            "--include-namespaces",
            &ns.name,
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    let backup = Api::<Backup>::namespaced(client, &ns.name)
        .get("b1")
        .await
        .unwrap();
    let status = backup.status.unwrap();
    assert_eq!(status.phase, Some(ark_api::BackupPhase::FailedValidation));
    assert_eq!(
        status.validation_errors.unwrap(),
        ["backup storage location \"default\" is read-only"]
    );
    assert_eq!(std::fs::read_dir(bucket.path()).unwrap().count(), 0);
}

/// A tarball with entries that try to escape: a link, `..`, an absolute path. The good entry is
/// restored; each bad one is named in the restore's errors; nothing is written outside.
#[tokio::test]
async fn a_hostile_tarball_restores_what_is_sound_and_names_the_rest() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("target").await;
    let bucket = tempfile::tempdir().unwrap();
    let server = ArkServer::start(ARK, &cluster, &ns.name);
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup-location",
            "create",
            "default",
            "--provider",
            "file",
            "--default",
            "--bucket",
            bucket.path().to_str().unwrap(),
        ],
    );

    // The backup appears in the bucket only; sync turns it into a Backup object.
    let config_map = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "sound", "namespace": app.name }, "data": { "k": "v" },
    });
    let mut builder = tar::Builder::new(Vec::new());
    let mut add = |name: &str, data: &[u8], kind: tar::EntryType| {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(kind);
        let bytes = name.as_bytes();
        header.as_gnu_mut().unwrap().name[..bytes.len()].copy_from_slice(bytes);
        if kind == tar::EntryType::Symlink {
            header.set_link_name("/etc/passwd").unwrap();
        }
        header.set_cksum();
        builder.append(&header, data).unwrap();
    };
    add("metadata/version", b"1.1.0", tar::EntryType::Regular);
    let item = serde_json::to_vec(&config_map).unwrap();
    add(
        &format!("resources/configmaps/namespaces/{}/sound.json", app.name),
        &item,
        tar::EntryType::Regular,
    );
    add("../../../escaped.json", &item, tar::EntryType::Regular);
    add("/tmp/ark-absolute.json", &item, tar::EntryType::Regular);
    add("resources/link.json", b"", tar::EntryType::Symlink);
    let tar = builder.into_inner().unwrap();
    fixtures::put_file_backup(
        bucket.path(),
        "evil",
        serde_json::json!({ "includedNamespaces": [app.name] }),
        &fixtures::gzip(&tar),
    );

    let backups: Api<Backup> = Api::namespaced(client.clone(), &ns.name);
    wait_for(backups, "evil", |b: Option<&Backup>| b.is_some(), WAIT)
        .await
        .unwrap();
    let output = ark(
        Some(&cluster),
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "evil",
            "--wait",
            "-n",
            &ns.name,
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    assert!(text(&output.stdout).contains("Restore completed with status: PartiallyFailed."));

    let sound = Api::<ConfigMap>::namespaced(client.clone(), &app.name)
        .get("sound")
        .await
        .unwrap();
    assert_eq!(sound.data.unwrap()["k"], "v");
    let describe = ark_ok(
        &cluster,
        &ns.name,
        &["restore", "describe", "r1", "--details"],
    );
    for expected in [
        "Velero:  tarball entry \"../../../escaped.json\": path contains '..'",
        "Velero:  tarball entry \"/tmp/ark-absolute.json\": absolute path",
        "Velero:  tarball entry \"resources/link.json\": Symlink entries (links, devices) are not restored",
    ] {
        assert!(
            describe.contains(expected),
            "{expected:?} not in:\n{describe}"
        );
    }
    assert!(!server.scratch_parent().join("escaped.json").exists());
    assert!(
        !server
            .scratch_parent()
            .parent()
            .unwrap()
            .join("escaped.json")
            .exists()
    );
    assert!(!std::path::Path::new("/tmp/ark-absolute.json").exists());
}

/// `--wait` with no server in the namespace: after 10 s of New it says so, names the namespace
/// and how to start one, and goes on waiting until its `--timeout` (before: silent until then).
#[tokio::test]
async fn a_wait_with_no_server_running_says_so_and_ends_at_its_timeout() {
    let cluster = Cluster::get();
    let ns = cluster.namespace("ark").await;
    let output = ark(
        Some(&cluster),
        &[
            "backup",
            "create",
            "b1",
            "--wait",
            "--timeout",
            "12s",
            "-n",
            &ns.name,
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    let notice = format!(
        "Backup b1 is still New after 10s: no ark (or Velero) server seems to run in namespace {0}; \
         start one with `ark server -n {0}`, or, for a namespace's own backups, an administrator \
         delegates it to an ark with `kubectl label namespace {0} ark.io/tenant-of=<ark's \
         namespace>`. Still waiting.\n",
        ns.name
    );
    assert!(stderr.starts_with(&notice), "{stderr}");
    assert!(
        stderr.contains("gave up waiting for b1 after 12s: it is still New"),
        "{stderr}"
    );
}
