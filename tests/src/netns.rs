//! A network namespace of its own for a local process, which still reaches chosen servers on the
//! host's loopback at their usual addresses: a forwarder listens on each address inside the
//! namespace and connects to the same address on the host.
//!
//! Velero's server needs it beside Velero's node agent on the real node: both bind `:8080`
//! (controller-runtime's metrics; Velero has no flag for it), and the agent must be on the host's
//! network, the only way to the API server and S3 here.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd as _;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The namespace (`ip netns`), removed with its forwarders when dropped.
pub struct IsolatedNetwork {
    name: String,
    stopped: Arc<AtomicBool>,
}

impl IsolatedNetwork {
    /// A new namespace with its loopback up, forwarding each of `addresses` (loopback addresses
    /// of the host) to the host.
    pub fn new(addresses: &[SocketAddr]) -> IsolatedNetwork {
        let name = crate::unique_name("ark-tests");
        ip(&["netns", "add", &name]);
        let network = IsolatedNetwork {
            name,
            stopped: Arc::default(),
        };
        ip(&["-n", &network.name, "link", "set", "lo", "up"]);
        let namespace = std::fs::File::open(format!("/run/netns/{}", network.name))
            .expect("the new network namespace");
        let addresses = addresses.to_vec();
        // A thread of its own enters the namespace to bind there (setns moves the calling thread
        // only) and ends; the sockets stay in the namespace.
        let listeners = std::thread::spawn(move || {
            // SAFETY: setns with a valid namespace descriptor changes only this thread's namespace.
            let entered = unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(entered, 0, "setns: {}", std::io::Error::last_os_error());
            addresses
                .iter()
                .map(|address| {
                    let listener = TcpListener::bind(address)
                        .unwrap_or_else(|e| panic!("bind {address} in the namespace: {e}"));
                    (listener, *address)
                })
                .collect::<Vec<_>>()
        })
        .join()
        .expect("binding in the network namespace");
        for (listener, target) in listeners {
            let stopped = network.stopped.clone();
            std::thread::spawn(move || forward(listener, target, &stopped));
        }
        network
    }

    /// `program` to be run inside the namespace.
    pub fn command(&self, program: &std::path::Path) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.name]).arg(program);
        command
    }
}

impl Drop for IsolatedNetwork {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

fn ip(args: &[&str]) {
    let output = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        output.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Accepts until `stopped`, joining each connection to a new one to `target` on the host.
fn forward(listener: TcpListener, target: SocketAddr, stopped: &AtomicBool) {
    listener.set_nonblocking(true).unwrap();
    while !stopped.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((inbound, _)) => {
                inbound.set_nonblocking(false).unwrap();
                match TcpStream::connect(target) {
                    Ok(outbound) => join(inbound, outbound),
                    Err(_) => drop(inbound),
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => return,
        }
    }
}

/// Copies each way on a thread of its own; each end's close passes on as a shutdown.
fn join(a: TcpStream, b: TcpStream) {
    let (a2, b2) = (a.try_clone().unwrap(), b.try_clone().unwrap());
    std::thread::spawn(move || pipe(a, b));
    std::thread::spawn(move || pipe(b2, a2));
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let mut buffer = [0u8; 64 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}
