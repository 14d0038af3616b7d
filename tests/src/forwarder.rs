//! A TCP forwarder a test controls, placed between a service and one of its
//! dependencies (Redis, PostgreSQL, the auth-service) to simulate an outage
//! without touching the real server: `Forward` relays bytes, `Stall` keeps
//! connections open but silent (a hung dependency), `Cut` closes every
//! connection and refuses new ones (a dead dependency).

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Forward,
    Stall,
    Cut,
}

/// A running forwarder; dropping it stops accepting.
pub struct Forwarder {
    pub addr: SocketAddr,
    mode: watch::Sender<Mode>,
    task: tokio::task::JoinHandle<()>,
}

impl Forwarder {
    /// Listens on a free loopback port and forwards to `target` (`host:port`).
    pub async fn start(target: &str) -> Forwarder {
        Forwarder::start_at("127.0.0.1:0", target).await
    }

    /// Listens on `listen` (e.g. an address a service was told about before
    /// anything listened there: a dependency that comes up late) and
    /// forwards to `target`.
    pub async fn start_at(listen: &str, target: &str) -> Forwarder {
        let listener = TcpListener::bind(listen).await.expect("bind forwarder");
        let addr = listener.local_addr().expect("forwarder address");
        let (mode, watcher) = watch::channel(Mode::Forward);
        let target = target.to_owned();
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                if *watcher.borrow() == Mode::Cut {
                    drop(client);
                    continue;
                }
                tokio::spawn(relay(client, target.clone(), watcher.clone()));
            }
        });
        Forwarder { addr, mode, task }
    }

    pub fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }

    /// `host:port` of the forwarder.
    pub fn authority(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn relay(mut client: TcpStream, target: String, mut mode: watch::Receiver<Mode>) {
    let Ok(mut server) = TcpStream::connect(&target).await else {
        return;
    };
    let mut up = vec![0u8; 16 * 1024];
    let mut down = vec![0u8; 16 * 1024];
    loop {
        let current = *mode.borrow_and_update();
        match current {
            Mode::Cut => return,
            Mode::Stall => {
                if mode.changed().await.is_err() {
                    return;
                }
            }
            Mode::Forward => {
                tokio::select! {
                    read = client.read(&mut up) => match read {
                        Ok(0) | Err(_) => return,
                        Ok(n) => if server.write_all(&up[..n]).await.is_err() { return },
                    },
                    read = server.read(&mut down) => match read {
                        Ok(0) | Err(_) => return,
                        Ok(n) => if client.write_all(&down[..n]).await.is_err() { return },
                    },
                    changed = mode.changed() => if changed.is_err() { return },
                }
            }
        }
    }
}
