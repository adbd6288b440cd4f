//! A block volume exposed on a node, handed to that node's agent. The agent cannot open the
//! device itself: the container runtime lets a container open only the devices its pod was given
//! (the device cgroup checks each open). So the exposing pod is given the volume as a device
//! (`volumeDevices`), opens it (`ark hold-volumes --device`), and passes the open descriptor to
//! the agent over a unix socket in a directory of its own (an emptyDir, which the agent reaches
//! through the kubelet's pod directory); reads and writes of an open descriptor are not checked
//! again. The pod holds no token and no capability: it can do nothing with the device but hand
//! it over.

use std::convert::Infallible;
use std::fs::File;
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

/// The exposing pod's directory volume (an emptyDir) that holds the socket, and where the pod
/// mounts it.
pub const DIRECTORY: &str = "hand-over";
/// The socket's name in it.
pub const SOCKET: &str = "device.sock";
/// How long the agent tries to connect: the pod runs before it listens.
const CONNECT_WITHIN: Duration = Duration::from_secs(30);

/// Opens the block device at `device` (for writing too when `writable`) and hands it to each
/// process that connects to a new socket at `socket`, until the process is stopped.
pub async fn serve(device: &Path, writable: bool, socket: &Path) -> std::io::Result<Infallible> {
    let shown = device.display();
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .write(writable)
        .open(device)
        .map_err(|e| annotate(e, &format!("opening {shown}")))?;
    if !opened.metadata()?.file_type().is_block_device() {
        return Err(std::io::Error::other(format!(
            "{shown} is not a block device"
        )));
    }
    let _ = std::fs::remove_file(socket);
    let listener = tokio::net::UnixListener::bind(socket)
        .map_err(|e| annotate(e, &format!("listening on {}", socket.display())))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    loop {
        let (stream, _) = listener.accept().await?;
        if let Err(error) = hand_over(&stream, &opened) {
            eprintln!("handing {shown} over: {error}");
        }
    }
}

/// Sends `device`'s descriptor over `stream` (one byte: it never waits for room).
fn hand_over(stream: impl AsFd, device: &File) -> rustix::io::Result<usize> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = [device.as_fd()];
    control.push(SendAncillaryMessage::ScmRights(&fds));
    // One byte of data: a message of none carries no control data on a stream socket.
    rustix::net::sendmsg(
        stream,
        &[IoSlice::new(b"d")],
        &mut control,
        SendFlags::empty(),
    )
}

/// The device the exposing pod hands over at `socket` (a path under the kubelet's pod directory),
/// once it listens (within [`CONNECT_WITHIN`]); refused unless the socket is one and what comes is
/// a block device.
pub fn receive(socket: &Path) -> Result<File, String> {
    let shown = socket.display();
    let deadline = std::time::Instant::now() + CONNECT_WITHIN;
    let stream = loop {
        // Never through a symlink: the pod's directory is the pod's to fill.
        let connected = match std::fs::symlink_metadata(socket) {
            Ok(meta) if !meta.file_type().is_socket() => {
                return Err(format!("{shown} is not a socket"));
            }
            Ok(_) => UnixStream::connect(socket),
            Err(error) => Err(error),
        };
        match connected {
            Ok(stream) => break stream,
            Err(error) if std::time::Instant::now() > deadline => {
                return Err(format!(
                    "the exposing pod did not hand its device over at {shown} within {} s: {error}",
                    CONNECT_WITHIN.as_secs()
                ));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    };
    let read_timeout = stream.set_read_timeout(Some(CONNECT_WITHIN));
    read_timeout.map_err(|e| format!("{shown}: {e}"))?;
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    rustix::net::recvmsg(
        &stream,
        &mut [IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(|e| format!("receiving the device at {shown}: {e}"))?;
    let mut received: Vec<OwnedFd> = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = message {
            received.extend(fds);
        }
    }
    let device = match <[OwnedFd; 1]>::try_from(received) {
        Ok([fd]) => File::from(fd),
        Err(fds) => {
            return Err(format!(
                "{shown} handed over {} descriptors, not one",
                fds.len()
            ));
        }
    };
    let kind = device.metadata().map_err(|e| format!("{shown}: {e}"))?;
    if !kind.file_type().is_block_device() {
        return Err(format!(
            "{shown} handed over something that is not a block device"
        ));
    }
    Ok(device)
}

fn annotate(error: std::io::Error, doing: &str) -> std::io::Error {
    std::io::Error::new(error.kind(), format!("{doing}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is handed over must be a block device: a regular file is refused by both sides, and
    /// a path that is no socket is not connected to (the test cannot make a device; the real
    /// node's tests hand one over).
    #[tokio::test]
    async fn only_a_block_device_is_handed_over() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, b"not a device").unwrap();
        let socket = dir.path().join(SOCKET);
        let refused = serve(&file, false, &socket).await.unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!("{} is not a block device", file.display())
        );

        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let holder = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            hand_over(&stream, &File::open(&file).unwrap()).unwrap();
        });
        assert_eq!(
            receive(&socket).unwrap_err(),
            format!(
                "{} handed over something that is not a block device",
                socket.display()
            )
        );
        holder.join().unwrap();

        std::fs::remove_file(&socket).unwrap();
        std::fs::write(&socket, b"").unwrap();
        assert_eq!(
            receive(&socket).unwrap_err(),
            format!("{} is not a socket", socket.display())
        );
    }
}
