//! A file of a backup or restore fetched through the server, as Velero's CLI fetches it: a
//! DownloadRequest that the server answers with a signed URL. For people who may not read the
//! location's credentials (ark's admin-viewer role): the server hands out only the files Velero's API
//! names, each for ten minutes.

use std::time::Duration;

use anyhow::{Context as _, bail};
use ark_api::{DownloadRequest, DownloadRequestPhase};
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::wait::await_condition;

/// How long the server may take to answer before ark gives up and says why it may not have.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// The bytes of the file of `kind` (Velero's DownloadTargetKind: `BackupLog`, `RestoreResults`...)
/// of the backup or restore `name`; None when the bucket does not hold that file.
pub async fn fetch_if_there(
    client: &kube::Client,
    namespace: &str,
    kind: &str,
    name: &str,
) -> anyhow::Result<Option<Vec<u8>>> {
    match response(client, namespace, kind, name).await? {
        Some(response) => Ok(Some(response.bytes().await?.to_vec())),
        None => Ok(None),
    }
}

/// The same file written to `out` as it arrives (a backup's contents may not fit in memory); the
/// bytes written.
pub async fn fetch_into(
    client: &kube::Client,
    namespace: &str,
    kind: &str,
    name: &str,
    out: &mut (impl tokio::io::AsyncWrite + Unpin),
) -> anyhow::Result<u64> {
    use tokio::io::AsyncWriteExt as _;
    let mut response = response(client, namespace, kind, name)
        .await?
        .with_context(|| format!("the {kind} of {name} is not in the bucket"))?;
    let mut written = 0;
    while let Some(chunk) = response
        .chunk()
        .await
        .with_context(|| format!("downloading the {kind} of {name}"))?
    {
        out.write_all(&chunk).await?;
        written += chunk.len() as u64;
    }
    out.flush().await?;
    Ok(written)
}

/// The server's answer to a DownloadRequest for the file, fetched; None when the bucket answers
/// that it holds no such file.
async fn response(
    client: &kube::Client,
    namespace: &str,
    kind: &str,
    name: &str,
) -> anyhow::Result<Option<reqwest::Response>> {
    let api: Api<DownloadRequest> = Api::namespaced(client.clone(), namespace);
    let request: DownloadRequest = serde_json::from_value(serde_json::json!({
        "apiVersion": "velero.io/v1", "kind": "DownloadRequest",
        "metadata": { "generateName": format!("{name}-") },
        "spec": { "target": { "kind": kind, "name": name } },
    }))?;
    let request_name = api
        .create(&PostParams::default(), &request)
        .await
        .with_context(|| format!("cannot ask the server for the {kind} of {name}"))?
        .name_any();
    let answered = |request: Option<&DownloadRequest>| {
        request
            .and_then(|r| r.status.as_ref())
            .is_some_and(|s| s.phase == Some(DownloadRequestPhase::Processed))
    };
    let waited = tokio::time::timeout(
        ANSWER_TIMEOUT,
        await_condition(api.clone(), &request_name, answered),
    )
    .await;
    // Answered or not, the request has served its purpose (the server would remove it later).
    let _ = api.delete(&request_name, &DeleteParams::default()).await;
    let Ok(waited) = waited else {
        bail!(
            "the server did not answer download request {request_name} for the {kind} of {name} \
             within {}s: no ark server runs in namespace {namespace}, or the location cannot hand \
             out URLs (a `file` location)",
            ANSWER_TIMEOUT.as_secs()
        );
    };
    let url = waited
        .context("watching the download request")?
        .and_then(|r| r.status?.download_url)
        .context("the download request was removed before it was answered")?;
    let response = reqwest::get(&url)
        .await
        .with_context(|| format!("cannot download the {kind} of {name}"))?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !response.status().is_success() {
        bail!("downloading the {kind} of {name}: {}", response.status());
    }
    Ok(Some(response))
}
