//! The repositories a node agent has open, one per location and workload namespace, kept across
//! requests: opening one derives its key from the password (scrypt, 64 MiB) and loads its index,
//! which an unchanged volume's backup would otherwise spend most of its time on. One request at a
//! time uses a repository; each use first reads what other writers added since.

use std::collections::HashMap;
use std::sync::Arc;

use ark_kopia::Repository;
use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::domain::repositories::{self, RepositoryError};

type Key = (String, String);

pub struct OpenRepositories {
    client: kube::Client,
    namespace: String,
    open: Mutex<HashMap<Key, Arc<Mutex<Option<Repository>>>>>,
}

/// A repository in use by one request; dropping it hands it to the next.
pub struct InUse(OwnedMutexGuard<Option<Repository>>);

impl std::ops::Deref for InUse {
    type Target = Repository;
    fn deref(&self) -> &Repository {
        self.0.as_ref().expect("opened before it is handed out")
    }
}

impl InUse {
    /// Closes it after a failure, so that the next request opens it afresh (its password or
    /// location may have changed, or the repository may be another one now).
    pub fn discard(mut self) {
        *self.0 = None;
    }
}

impl OpenRepositories {
    pub fn new(client: kube::Client, namespace: String) -> Self {
        OpenRepositories {
            client,
            namespace,
            open: Mutex::default(),
        }
    }

    /// The repository of `volume_namespace` in `location`, waiting while another request uses it.
    pub async fn get(
        &self,
        location: &str,
        volume_namespace: &str,
    ) -> Result<InUse, RepositoryError> {
        let slot = self
            .open
            .lock()
            .await
            .entry((location.to_string(), volume_namespace.to_string()))
            .or_default()
            .clone();
        let mut guard = slot.lock_owned().await;
        if let Some(repository) = guard.as_ref()
            && let Err(error) = repository.contents().refresh().await
        {
            tracing::warn!(
                "the repository of {volume_namespace} in {location}: reading what was added: \
                 {error}; opening it again"
            );
            *guard = None;
        }
        if guard.is_none() {
            let opened =
                repositories::open(&self.client, &self.namespace, location, volume_namespace)
                    .await?;
            *guard = Some(opened);
        }
        Ok(InUse(guard))
    }
}
