//! `ark server`: the controllers that carry out Backups, Restores and DeleteBackupRequests.

/// How the server is run.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// The namespace whose ark objects this server acts on.
    pub namespace: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("the server's controllers are not implemented yet")]
    NotImplemented,
}

/// Runs the controllers until the process is told to stop.
pub async fn run(_client: kube::Client, _options: ServerOptions) -> Result<(), ServerError> {
    Err(ServerError::NotImplemented)
}
