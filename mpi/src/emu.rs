//! The delay relay of the emulated cluster (`jobs/emucluster`): where the
//! kernel has no `netem`, each node's link is a pair of tap devices (one in
//! the node's network namespace, one on the bridge) and this relay copies
//! frames between them, holding frames that leave a node for a fixed delay.
//! Frames into a node pass at once, so node to node gains the delay once.
//! Run by `emucluster up` as `colltune emu-relay`; Linux only, root.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

/// Opens tap device `name` in the current network namespace.
fn open_tap(name: &str) -> io::Result<OwnedFd> {
    // SAFETY: plain open(2) of a device node with a NUL-terminated path.
    let fd = unsafe {
        libc::open(
            c"/dev/net/tun".as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is owned here.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = [0u8; 40]; // struct ifreq: name[16], flags at 16
    let b = name.as_bytes();
    if b.len() >= 16 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("interface name {name} too long"),
        ));
    }
    req[..b.len()].copy_from_slice(b);
    let flags: libc::c_short = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
    req[16..18].copy_from_slice(&flags.to_ne_bytes());
    // SAFETY: TUNSETIFF takes a struct ifreq, which req lays out.
    if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, req.as_mut_ptr()) } < 0 {
        return Err(io::Error::other(format!(
            "TUNSETIFF {name}: {}",
            io::Error::last_os_error()
        )));
    }
    Ok(fd)
}

/// Runs `f` inside network namespace `ns` (a name under /run/netns).
fn in_netns<T>(ns: &str, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let here = File::open("/proc/self/ns/net")?;
    let there = File::open(format!("/run/netns/{ns}"))
        .map_err(|e| io::Error::other(format!("network namespace {ns}: {e}")))?;
    // SAFETY: setns with an open namespace fd; this thread only.
    if unsafe { libc::setns(there.as_raw_fd(), libc::CLONE_NEWNET) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let r = f();
    // SAFETY: as above, back to where we were.
    if unsafe { libc::setns(here.as_raw_fd(), libc::CLONE_NEWNET) } < 0 {
        return Err(io::Error::last_os_error());
    }
    r
}

struct Link {
    node: OwnedFd,
    host: OwnedFd,
}

/// `pairs`: `netns:device=hostdevice`. Never returns unless on error.
pub fn relay(
    delay: Duration,
    pairs: &[String],
    pid_file: Option<&std::path::Path>,
) -> io::Result<()> {
    let mut links = Vec::new();
    for p in pairs {
        let bad = || {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{p}`: write netns:device=hostdevice"),
            )
        };
        let (node, host) = p.split_once('=').ok_or_else(bad)?;
        let (ns, dev) = node.split_once(':').ok_or_else(bad)?;
        let node = in_netns(ns, || open_tap(dev))?;
        let host = open_tap(host)?;
        links.push(Link { node, host });
    }
    // Wake up close to the deadline: tiny timer slack.
    // SAFETY: prctl with plain integers.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
    if let Some(p) = pid_file {
        std::fs::write(p, std::process::id().to_string())?;
    }
    let mut fds: Vec<libc::pollfd> = links
        .iter()
        .flat_map(|l| [l.node.as_raw_fd(), l.host.as_raw_fd()])
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // Frames leaving nodes, in arrival order (one delay for all: FIFO).
    let mut held: VecDeque<(Instant, usize, Vec<u8>)> = VecDeque::new();
    let mut buf = vec![0u8; 65536];
    loop {
        let timeout = held
            .front()
            .map(|(due, _, _)| {
                due.saturating_duration_since(Instant::now())
                    .as_millis()
                    .min(1000) as libc::c_int
            })
            .unwrap_or(1000);
        // SAFETY: fds is a valid array of pollfd.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for (i, p) in fds.iter_mut().enumerate() {
            if p.revents & libc::POLLIN == 0 {
                continue;
            }
            p.revents = 0;
            let link = i / 2;
            loop {
                // SAFETY: buf is valid for its length.
                let r = unsafe { libc::read(p.fd, buf.as_mut_ptr().cast(), buf.len()) };
                if r <= 0 {
                    break;
                }
                let frame = &buf[..r as usize];
                if i % 2 == 0 {
                    // out of node `link`: hold it
                    held.push_back((Instant::now() + delay, link, frame.to_vec()));
                } else {
                    // into node `link`: at once
                    // SAFETY: frame is valid for its length.
                    unsafe {
                        libc::write(
                            links[link].node.as_raw_fd(),
                            frame.as_ptr().cast(),
                            frame.len(),
                        )
                    };
                }
            }
        }
        // Busy-wait the last stretch: poll's millisecond timeout is too coarse.
        while let Some((due, _, _)) = held.front() {
            let now = Instant::now();
            if *due > now {
                if *due - now < Duration::from_millis(1) {
                    std::hint::spin_loop();
                    continue;
                }
                break;
            }
            let (_, link, frame) = held.pop_front().expect("front");
            // SAFETY: frame is valid for its length.
            unsafe {
                libc::write(
                    links[link].host.as_raw_fd(),
                    frame.as_ptr().cast(),
                    frame.len(),
                )
            };
        }
    }
}
