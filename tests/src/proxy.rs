//! A TCP proxy on loopback in front of a server (S3, or the API server: TLS passes through) that a
//! test can pause or take down, faults the real servers cannot be asked to produce:
//! - paused: nothing passes in either direction, on new connections or open ones, as from a
//!   server that stopped responding; everything flows again on `resume`;
//! - down: every open connection is reset and new ones are closed at once, as from a server that
//!   is restarting; `resume` lets new connections through again;
//! - losing answers: a request with a given method and path reaches the server, and the server's
//!   answer to it is dropped with the connection, as when a network fails after the server acted:
//!   the client cannot know whether it did.
//!
//! It also notes each HTTP request's first line as it arrives, held or not, so that a test can
//! wait until a client got as far as sending a given request.

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
    /// The first line of every plain HTTP request that arrived, in order.
    requests: Mutex<Vec<String>>,
}

impl State {
    fn note_request(&self, chunk: &[u8]) -> Option<String> {
        let line = request_line(chunk)?;
        self.requests.lock().unwrap().push(line.clone());
        Some(line)
    }
}

/// The first line of an HTTP/1.1 request (`PUT /bucket/key HTTP/1.1`) at the start of `chunk`:
/// a request's first line comes in its first chunk.
fn request_line(chunk: &[u8]) -> Option<String> {
    let line = chunk.split(|&b| b == b'\n').next()?;
    let line = String::from_utf8_lossy(line).trim_end().to_string();
    line.ends_with(" HTTP/1.1").then_some(line)
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

    /// Waits until a request whose first line contains `text` arrived (held while paused or not),
    /// for at most `timeout`.
    pub async fn wait_for_request(&self, text: &str, timeout: Duration) {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let requests = self.state.requests.lock().unwrap().clone();
            if requests.iter().any(|line| line.contains(text)) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no request {text:?} reached the proxy; it saw:\n{}",
                requests.join("\n")
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }
}

async fn connection(inbound: TcpStream, target: SocketAddr, state: Arc<State>) {
    let generation = state.generation.load(Ordering::SeqCst);
    // Held while paused, before connecting on; a request sent meanwhile is noted (peeked at, so
    // that it still goes on once resumed).
    let mut noted = false;
    let mut first = vec![0; 4096];
    while state.mode.load(Ordering::SeqCst) == PAUSED {
        if !noted
            && let Ok(Ok(n)) =
                tokio::time::timeout(Duration::from_millis(20), inbound.peek(&mut first)).await
        {
            noted = state.note_request(&first[..n]).is_some();
        }
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
        let line = match direction {
            Direction::Request(_) => state.note_request(&buffer[..n]),
            Direction::Answer(_) => None,
        };
        while state.mode.load(Ordering::SeqCst) == PAUSED {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        match direction {
            Direction::Request(doomed) => {
                let lost = state.lose_answers_to.lock().unwrap().clone();
                if let (Some(line), Some((method, path))) = (&line, lost)
                    && line.starts_with(&format!("{method} /"))
                    && line.contains(&path)
                {
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
