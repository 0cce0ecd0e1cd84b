//! The passive end: [`Receiver`] listens, accepts many senders at once, and
//! stores their files, discards their data, or hands it to a
//! [`DataHandler`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use netblt_proto::{Connection, Incoming, Mode};

use crate::app::io_reason;
use crate::app::meta::{encode_response, Request};
use crate::app::names::resolve;
use crate::app::params::{config, passive_limits, passive_rate};
use crate::app::sink::{Target, TempFile};
use crate::app::source::Input;
use crate::app::transfer::{Plan, Transfer};
use crate::driver::passive::{bind, run_passive, Accept, JunkCounts, PassiveOptions, Service};
use crate::driver::socket::NetSocket;
use crate::driver::Waker;
use crate::error::Error;
use crate::handler::{DataHandler, IncomingTransfer, SharedHandler};
use crate::options::{death_secs, ReceiverOptions};
use crate::report::{cpu_times, TransferReport};

/// A bound NETBLT receiver (the passive end), not yet serving.
///
/// Bind, learn the address ([`local_addr`](Receiver::local_addr)), then
/// serve with one of [`serve_dir`](Receiver::serve_dir),
/// [`sink`](Receiver::sink) or [`handle_with`](Receiver::handle_with), which
/// run on the calling thread until [`ReceiverOptions::max_transfers`]
/// transfers ended or [`ReceiverOptions::stop`] is set.
#[derive(Debug)]
pub struct Receiver {
    sock: NetSocket,
    listen: SocketAddr,
    opts: ReceiverOptions,
}

/// What a receiver did, once it stopped serving.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReceiverSummary {
    /// Transfers that ended (well or not).
    pub transfers: u64,
    /// Of those, the ones that failed.
    pub failed: u64,
    /// The last failure's error.
    pub last_error: Option<Error>,
    /// Datagrams that belonged to no transfer, and refused OPENs.
    pub junk: JunkCounts,
}

impl Receiver {
    /// Binds the listening socket: UDP on `addr` (port 0: any free port), or
    /// with [`ReceiverOptions::raw_ip`] IP protocol 30 with `addr`'s port as
    /// the NETBLT port.
    pub fn bind(addr: SocketAddr, opts: ReceiverOptions) -> Result<Receiver, Error> {
        let sock = bind(&passive_options(addr, &opts))?;
        Ok(Receiver {
            sock,
            listen: addr,
            opts,
        })
    }

    /// The address bound (over raw IP: the address given to
    /// [`bind`](Receiver::bind)).
    pub fn local_addr(&self) -> SocketAddr {
        self.sock.local_addr().unwrap_or(self.listen)
    }

    /// Stores received files below `dir` (names from the network are
    /// sanitized; a file appears only once verified, under a temporary name
    /// until then) and, with [`ReceiverOptions::serve`], lets peers fetch
    /// files from it. Memory-to-memory tests are discarded.
    pub fn serve_dir(self, dir: impl AsRef<Path>) -> Result<ReceiverSummary, Error> {
        let dir = dir.as_ref().to_path_buf();
        if !dir.is_dir() {
            return Err(Error::Local(format!("{}: not a directory", dir.display())));
        }
        self.serve(Data::Dir(dir))
    }

    /// Discards all data (after checking its digest): the far end of a
    /// memory-to-memory test.
    pub fn sink(self) -> Result<ReceiverSummary, Error> {
        self.serve(Data::Discard)
    }

    /// Hands every transfer's data to `handler` (see [`DataHandler`]).
    pub fn handle_with(self, handler: impl DataHandler) -> Result<ReceiverSummary, Error> {
        self.serve(Data::Handler(Arc::new(Mutex::new(handler))))
    }

    fn serve(self, data: Data) -> Result<ReceiverSummary, Error> {
        let popts = passive_options(self.listen, &self.opts);
        let never = AtomicBool::new(false);
        let stop = self.opts.stop.clone();
        let mut svc = Policy {
            data,
            opts: self.opts,
            v6: self.listen.is_ipv6(),
            summary: ReceiverSummary::default(),
        };
        let junk = run_passive(
            &popts,
            self.sock,
            &mut svc,
            stop.as_deref().unwrap_or(&never),
        )?;
        svc.summary.junk = junk;
        Ok(svc.summary)
    }
}

fn passive_options(listen: SocketAddr, o: &ReceiverOptions) -> PassiveOptions {
    PassiveOptions {
        listen,
        raw: o.raw_ip,
        security: o.security.clone(),
        config: config(
            passive_limits(),
            death_secs(o.death_timer),
            listen.is_ipv6(),
            passive_rate(),
        ),
    }
}

/// Where the data of WRITE transfers go.
enum Data {
    Dir(PathBuf),
    Discard,
    Handler(SharedHandler),
}

/// The receiver's policy: the driver's [`Service`].
struct Policy {
    data: Data,
    opts: ReceiverOptions,
    v6: bool,
    summary: ReceiverSummary,
}

impl Policy {
    fn target(&self, name: &str, size: u64, peer: SocketAddr) -> Result<Target, String> {
        match &self.data {
            Data::Discard => Ok(Target::Discard),
            Data::Dir(dir) => {
                let path = resolve(dir, name, true)?;
                let f = TempFile::create(&path, self.opts.overwrite).map_err(|e| e.peer_reason)?;
                Ok(Target::File(f))
            }
            Data::Handler(h) => {
                let t = IncomingTransfer {
                    name: name.to_string(),
                    size,
                    peer,
                };
                h.lock()
                    .map_err(|_| "receiver's handler failed".to_string())?
                    .accept(&t)?;
                Ok(Target::Handler(Arc::clone(h), t))
            }
        }
    }

    fn plan(&self, inc: &Incoming, req: Request) -> Result<(Plan, String, Option<u64>), String> {
        match (inc.mode, req) {
            (Mode::Write, Request::Sink { size }) => {
                let target = match &self.data {
                    Data::Handler(_) => self.target("sink", size, inc.remote)?,
                    _ => Target::Discard,
                };
                Ok((
                    Plan::Receive {
                        size: Some(size),
                        target: Some(target),
                        make: None,
                    },
                    "sink".into(),
                    None,
                ))
            }
            (Mode::Write, Request::Put { name, size }) => {
                let target = self.target(&name, size, inc.remote)?;
                Ok((
                    Plan::Receive {
                        size: Some(size),
                        target: Some(target),
                        make: None,
                    },
                    name,
                    None,
                ))
            }
            (Mode::Read, Request::Get { name }) => {
                let dir = match &self.data {
                    Data::Dir(d) if self.opts.serve => d,
                    _ => return Err("reading not enabled (start the receiver with --serve)".into()),
                };
                let path = resolve(dir, &name, false)?;
                let file = std::fs::File::open(&path).map_err(|e| io_reason(&e))?;
                let meta = file.metadata().map_err(|e| io_reason(&e))?;
                if !meta.is_file() {
                    return Err("not a regular file".into());
                }
                Ok((
                    Plan::Send {
                        reader: Input::Read(Box::new(file)),
                        size: meta.len(),
                    },
                    name,
                    Some(meta.len()),
                ))
            }
            _ => Err("operation does not match the NETBLT mode".into()),
        }
    }
}

impl Service for Policy {
    type App = Transfer;

    fn incoming(&mut self, inc: &Incoming, waker: &Arc<Waker>) -> Result<Accept<Transfer>, String> {
        let req = Request::decode(&inc.client)?;
        let (plan, name, size) = self.plan(inc, req)?;
        let mut cfg = config(
            passive_limits(),
            death_secs(self.opts.death_timer),
            self.v6,
            passive_rate(),
        );
        cfg.params = passive_limits();
        Ok(Accept {
            config: Some(cfg),
            response: encode_response(size),
            transfer: Transfer::new(name, plan, Arc::clone(waker)),
        })
    }

    fn finished(
        &mut self,
        app: Transfer,
        conn: &Connection,
        peer: SocketAddr,
        wall: Duration,
        junk: JunkCounts,
    ) -> bool {
        let report = TransferReport::new(&app, conn, peer.to_string(), wall, cpu_times());
        let s = &mut self.summary;
        s.transfers += 1;
        if let Some(e) = &report.error {
            s.failed += 1;
            s.last_error = Some(e.clone());
        }
        if let Some(f) = &self.opts.on_transfer {
            f(&report, &junk);
        }
        self.opts.max_transfers.is_none_or(|m| s.transfers < m)
    }
}
