//! A TCP proxy on loopback in front of the S3 server that a test can pause: connections made while
//! paused are held open without an answer, as from a bucket that stopped responding. A fault the
//! real server cannot be asked to produce.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::net::{TcpListener, TcpStream};

pub struct PausableProxy {
    pub address: SocketAddr,
    paused: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl PausableProxy {
    /// Forwards 127.0.0.1:<random port> to `target`.
    pub async fn start(target: SocketAddr) -> PausableProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let address = listener.local_addr().unwrap();
        let paused = Arc::new(AtomicBool::new(false));
        let flag = paused.clone();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((mut inbound, _)) = listener.accept().await {
                if flag.load(Ordering::SeqCst) {
                    held.push(inbound);
                    continue;
                }
                tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        PausableProxy {
            address,
            paused,
            task,
        }
    }

    pub fn pause(&self) {
        self.paused.store(true, Ordering::SeqCst);
    }

    pub fn resume(&self) {
        self.paused.store(false, Ordering::SeqCst);
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }
}

impl Drop for PausableProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
