//! A TCP proxy on loopback in front of the S3 server that a test can pause: connections made while
//! paused are held open without an answer, as from a bucket that stopped responding, and are
//! answered once it resumes, as from one that was briefly gone. A fault the real server cannot be
//! asked to produce.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};

pub struct PausableProxy {
    pub address: SocketAddr,
    target: SocketAddr,
    paused: Arc<AtomicBool>,
    held: Arc<Mutex<Vec<TcpStream>>>,
    task: tokio::task::JoinHandle<()>,
}

fn forward(mut inbound: TcpStream, target: SocketAddr) {
    tokio::spawn(async move {
        if let Ok(mut outbound) = TcpStream::connect(target).await {
            let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
        }
    });
}

impl PausableProxy {
    /// Forwards 127.0.0.1:<random port> to `target`.
    pub async fn start(target: SocketAddr) -> PausableProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let address = listener.local_addr().unwrap();
        let paused = Arc::new(AtomicBool::new(false));
        let held: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (flag, hold) = (paused.clone(), held.clone());
        let task = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                if flag.load(Ordering::SeqCst) {
                    hold.lock().unwrap().push(inbound);
                } else {
                    forward(inbound, target);
                }
            }
        });
        PausableProxy {
            address,
            target,
            paused,
            held,
            task,
        }
    }

    pub fn pause(&self) {
        self.paused.store(true, Ordering::SeqCst);
    }

    /// Forwards new connections again, and those held meanwhile. Call it within the runtime.
    pub fn resume(&self) {
        self.paused.store(false, Ordering::SeqCst);
        for inbound in self.held.lock().unwrap().drain(..) {
            forward(inbound, self.target);
        }
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
