//! A TCP proxy on loopback in front of a server (S3, or the API server: TLS passes through) that a
//! test can pause or take down, faults the real servers cannot be asked to produce:
//! - paused: nothing passes in either direction, on new connections or open ones, as from a
//!   server that stopped responding; everything flows again on `resume`;
//! - down: every open connection is reset and new ones are closed at once, as from a server that
//!   is restarting; `resume` lets new connections through again;
//! - losing answers: a request with a given method and path reaches the server, and the server's
//!   answer to it is dropped with the connection, as when a network fails after the server acted:
//!   the client cannot know whether it did.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const UP: u8 = 0;
const PAUSED: u8 = 1;
const DOWN: u8 = 2;

#[derive(Default)]
struct State {
    mode: AtomicU8,
    /// Bumped each time the proxy goes down: connections of an earlier generation close.
    generation: AtomicU64,
    /// Requests of this method whose path contains this text lose their answer.
    lose_answers_to: Mutex<Option<(String, String)>>,
}

pub struct PausableProxy {
    pub address: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl PausableProxy {
    /// Forwards 127.0.0.1:<random port> to `target`.
    pub async fn start(target: SocketAddr) -> PausableProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let address = listener.local_addr().unwrap();
        let state: Arc<State> = Arc::default();
        let shared = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                if shared.mode.load(Ordering::SeqCst) == DOWN {
                    drop(inbound);
                    continue;
                }
                tokio::spawn(connection(inbound, target, shared.clone()));
            }
        });
        PausableProxy {
            address,
            state,
            task,
        }
    }

    pub fn pause(&self) {
        self.state.mode.store(PAUSED, Ordering::SeqCst);
    }

    /// Resets every open connection and refuses new ones until `resume`.
    pub fn take_down(&self) {
        self.state.generation.fetch_add(1, Ordering::SeqCst);
        self.state.mode.store(DOWN, Ordering::SeqCst);
    }

    /// From now on, drops the answer to every `method` request whose path contains `path` (with
    /// its connection).
    pub fn lose_answers_to(&self, method: &str, path: &str) {
        *self.state.lose_answers_to.lock().unwrap() = Some((method.into(), path.into()));
    }

    pub fn resume(&self) {
        self.state.mode.store(UP, Ordering::SeqCst);
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }
}

async fn connection(inbound: TcpStream, target: SocketAddr, state: Arc<State>) {
    let generation = state.generation.load(Ordering::SeqCst);
    // Held while paused, before connecting on.
    while state.mode.load(Ordering::SeqCst) == PAUSED {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let Ok(outbound) = TcpStream::connect(target).await else {
        return;
    };
    let (client_read, client_write) = inbound.into_split();
    let (server_read, server_write) = outbound.into_split();
    // Set when a request whose answer is to be lost went by: HTTP/1.1 answers in order, so the
    // next bytes from the server are that answer.
    let doomed = AtomicBool::new(false);
    tokio::select! {
        () = pump(client_read, server_write, &state, generation, Direction::Request(&doomed)) => {}
        () = pump(server_read, client_write, &state, generation, Direction::Answer(&doomed)) => {}
    }
}

enum Direction<'a> {
    Request(&'a AtomicBool),
    Answer(&'a AtomicBool),
}

/// Copies one direction, holding each chunk while paused; ends when the proxy goes down, or
/// instead of passing on an answer to be lost.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    state: &State,
    generation: u64,
    direction: Direction<'_>,
) {
    let mut buffer = vec![0; 64 * 1024];
    let gone = || state.generation.load(Ordering::SeqCst) != generation;
    loop {
        let read = tokio::select! {
            read = from.read(&mut buffer) => read,
            () = async { while !gone() { tokio::time::sleep(Duration::from_millis(20)).await } } => return,
        };
        let n = match read {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        while state.mode.load(Ordering::SeqCst) == PAUSED {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        match direction {
            Direction::Request(doomed) => {
                let lost = state.lose_answers_to.lock().unwrap().clone();
                // A request's first line (`PUT /bucket/key HTTP/1.1`) comes in its first chunk.
                let first_line = buffer[..n]
                    .split(|&b| b == b'\n')
                    .next()
                    .unwrap_or_default();
                let first_line = String::from_utf8_lossy(first_line);
                if lost.is_some_and(|(method, path)| {
                    first_line.starts_with(&format!("{method} /")) && first_line.contains(&path)
                }) {
                    doomed.store(true, Ordering::SeqCst);
                }
            }
            Direction::Answer(doomed) if doomed.load(Ordering::SeqCst) => return,
            Direction::Answer(_) => {}
        }
        if gone() || to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
}

impl Drop for PausableProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
