//! Where a pod's volume is on its node, found as Velero's node agent finds it
//! (`kube.GetVolumeDirectory`, `exposer.GetPodVolumeHostPath`): under the kubelet's pod directory,
//! `<pods>/<pod uid>/volumes/<plugin>/<dir>`, where `<dir>` is the volume's name, or its
//! PersistentVolume's, with `/mount` after it for a CSI volume. Exactly one directory must match,
//! and it must be a directory inside `<pods>/<pod uid>/volumes`: anything else is refused.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::CSIDriver;
use kube::{Api, Client};

use crate::runtime::objects;

#[derive(Debug, thiserror::Error)]
pub enum VolumePathError {
    #[error("pod {pod} has no volume {volume:?}")]
    NoSuchVolume { pod: String, volume: String },
    #[error("reading {what}: {}", objects::reason(.error))]
    Api { what: String, error: kube::Error },
    #[error("claim {claim} is not bound to a volume")]
    Unbound { claim: String },
    #[error("volume {volume:?} of pod {pod} is not on this node: no directory {pattern}")]
    NotFound {
        pod: String,
        volume: String,
        pattern: String,
    },
    #[error("volume {volume:?} of pod {pod}: {count} directories match {pattern}")]
    Ambiguous {
        pod: String,
        volume: String,
        pattern: String,
        count: usize,
    },
    #[error("volume {volume:?} of pod {pod}: {path} leads outside the pod's volumes")]
    Escapes {
        pod: String,
        volume: String,
        path: String,
    },
    #[error("reading {path}: {error}")]
    Io { path: String, error: std::io::Error },
}

/// The annotations that name the CSI driver of a volume provisioned (or migrated) to one.
const PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
const MIGRATED_TO: &str = "pv.kubernetes.io/migrated-to";

/// The volume's directory name under its plugin's directory, as `kube.GetVolumeDirectory` gives it.
pub async fn volume_directory(
    client: &Client,
    pod: &Pod,
    volume: &str,
) -> Result<String, VolumePathError> {
    let pod_name = format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    );
    let spec_volume = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .and_then(|v| v.iter().find(|v| v.name == volume))
        .ok_or_else(|| VolumePathError::NoSuchVolume {
            pod: pod_name.clone(),
            volume: volume.into(),
        })?;
    let Some(claim) = &spec_volume.persistent_volume_claim else {
        return Ok(match spec_volume.csi {
            Some(_) => format!("{volume}/mount"),
            None => volume.to_string(),
        });
    };
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let claim_name = format!("{namespace}/{}", claim.claim_name);
    let pvc = Api::<PersistentVolumeClaim>::namespaced(client.clone(), &namespace)
        .get(&claim.claim_name)
        .await
        .map_err(|error| VolumePathError::Api {
            what: format!("claim {claim_name}"),
            error,
        })?;
    let pv_name = pvc
        .spec
        .and_then(|s| s.volume_name)
        .filter(|n| !n.is_empty())
        .ok_or(VolumePathError::Unbound { claim: claim_name })?;
    let pv = Api::<PersistentVolume>::all(client.clone())
        .get(&pv_name)
        .await
        .map_err(|error| VolumePathError::Api {
            what: format!("persistent volume {pv_name}"),
            error,
        })?;
    let block = pv.spec.as_ref().and_then(|s| s.volume_mode.as_deref()) == Some("Block");
    if is_csi(client, &pv).await? && !block {
        return Ok(format!("{pv_name}/mount"));
    }
    Ok(pv_name)
}

async fn is_csi(client: &Client, pv: &PersistentVolume) -> Result<bool, VolumePathError> {
    if pv.spec.as_ref().is_some_and(|s| s.csi.is_some()) {
        return Ok(true);
    }
    let annotations = pv.metadata.annotations.clone().unwrap_or_default();
    let named: Vec<&String> = [PROVISIONED_BY, MIGRATED_TO]
        .iter()
        .filter_map(|k| annotations.get(*k))
        .filter(|d| !d.is_empty())
        .collect();
    if named.is_empty() {
        return Ok(false);
    }
    let drivers = Api::<CSIDriver>::all(client.clone())
        .list(&Default::default())
        .await
        .map_err(|error| VolumePathError::Api {
            what: "CSI drivers".into(),
            error,
        })?;
    Ok(drivers
        .items
        .iter()
        .any(|d| d.metadata.name.as_ref().is_some_and(|n| named.contains(&n))))
}

/// The volume's directory on this node: `<pods>/<pod uid>/volumes/*/<dir>`, exactly one match,
/// a real directory inside the pod's volumes (a symlink that leads elsewhere is refused).
pub fn host_path(
    pods: &Path,
    pod: &str,
    pod_uid: &str,
    volume: &str,
    dir: &str,
) -> Result<PathBuf, VolumePathError> {
    let volumes = pods.join(pod_uid).join("volumes");
    let pattern = volumes.join("*").join(dir);
    let not_found = || VolumePathError::NotFound {
        pod: pod.into(),
        volume: volume.into(),
        pattern: pattern.display().to_string(),
    };
    if pod_uid.is_empty() || pod_uid.contains('/') || dir.split('/').any(|p| p == "..") {
        return Err(not_found());
    }
    let plugins = match std::fs::read_dir(&volumes) {
        Ok(plugins) => plugins,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Err(not_found()),
        Err(error) => {
            return Err(VolumePathError::Io {
                path: volumes.display().to_string(),
                error,
            });
        }
    };
    let mut matches = Vec::new();
    for plugin in plugins {
        let plugin = plugin.map_err(|error| VolumePathError::Io {
            path: volumes.display().to_string(),
            error,
        })?;
        let candidate = plugin.path().join(dir);
        if std::fs::symlink_metadata(&candidate).is_ok() {
            matches.push(candidate);
        }
    }
    let found = match matches.len() {
        0 => return Err(not_found()),
        1 => matches.remove(0),
        count => {
            return Err(VolumePathError::Ambiguous {
                pod: pod.into(),
                volume: volume.into(),
                pattern: pattern.display().to_string(),
                count,
            });
        }
    };
    let real = found.canonicalize().map_err(|error| VolumePathError::Io {
        path: found.display().to_string(),
        error,
    })?;
    let root = volumes
        .canonicalize()
        .map_err(|error| VolumePathError::Io {
            path: volumes.display().to_string(),
            error,
        })?;
    if !real.starts_with(&root) || !real.is_dir() {
        return Err(VolumePathError::Escapes {
            pod: pod.into(),
            volume: volume.into(),
            path: found.display().to_string(),
        });
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_volume_is_the_one_directory_under_its_pod_s_plugins() {
        let pods = tempfile::tempdir().unwrap();
        let volumes = pods.path().join("uid-1/volumes");
        std::fs::create_dir_all(volumes.join("kubernetes.io~empty-dir/data")).unwrap();
        std::fs::create_dir_all(volumes.join("kubernetes.io~csi/pv-1/mount")).unwrap();
        let found = host_path(pods.path(), "ns/db", "uid-1", "data", "data").unwrap();
        assert!(found.ends_with("kubernetes.io~empty-dir/data"));
        let csi = host_path(pods.path(), "ns/db", "uid-1", "claim", "pv-1/mount").unwrap();
        assert!(csi.ends_with("kubernetes.io~csi/pv-1/mount"));

        let missing = host_path(pods.path(), "ns/db", "uid-2", "data", "data").unwrap_err();
        assert_eq!(
            missing.to_string(),
            format!(
                "volume \"data\" of pod ns/db is not on this node: no directory {}/uid-2/volumes/*/data",
                pods.path().display()
            )
        );
        std::fs::create_dir_all(volumes.join("kubernetes.io~local-volume/data")).unwrap();
        let twice = host_path(pods.path(), "ns/db", "uid-1", "data", "data").unwrap_err();
        assert!(matches!(twice, VolumePathError::Ambiguous { count: 2, .. }));
    }

    #[test]
    fn a_volume_that_leads_out_of_the_pod_s_volumes_is_refused() {
        let pods = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let plugin = pods.path().join("uid-1/volumes/kubernetes.io~empty-dir");
        std::fs::create_dir_all(&plugin).unwrap();
        std::os::unix::fs::symlink(outside.path(), plugin.join("data")).unwrap();
        let escaped = host_path(pods.path(), "ns/db", "uid-1", "data", "data").unwrap_err();
        assert!(
            matches!(escaped, VolumePathError::Escapes { .. }),
            "{escaped}"
        );
        for (uid, dir) in [("../x", "data"), ("uid-1", "../../etc"), ("", "data")] {
            assert!(host_path(pods.path(), "ns/db", uid, "v", dir).is_err());
        }
    }
}
