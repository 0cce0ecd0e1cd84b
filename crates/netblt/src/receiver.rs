//! The passive end: [`Receiver`] listens, accepts many senders at once, and
//! stores their files, discards their data, or hands it to a
//! [`DataHandler`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use netblt_proto::{Connection, Incoming, Mode};

use crate::app::bundle::serve::serve_tree;
use crate::app::bundle::unpack::Unpacker;
use crate::app::bundle::FilesReport;
use crate::app::have::{HaveStore, Listed, NOT_KEPT};
use crate::app::meta::{Have, Request, Response, ALREADY_THERE, DIFFERS_THERE, NOTHING_TO_COMPARE};
use crate::app::names::resolve;
use crate::app::params::{config, passive_limits, passive_limits_for, passive_rate};
use crate::app::partial::{parse_digest, PartFile};
use crate::app::same::Listing;
use crate::app::sink::Target;
use crate::app::source::Input;
use crate::app::transfer::{Plan, Transfer};
use crate::app::tree::{prefix_hash, UNIT};
use crate::app::{hex, io_reason};
use crate::client::mtime_ns;
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
    /// Of those and of the refused ones, the ones that failed.
    pub failed: u64,
    /// The last failure's error (a refusal's too, unless benign).
    pub last_error: Option<Error>,
    /// Transfers refused before they began
    /// ([`ReceiverOptions::on_refused`]).
    pub refused: u64,
    /// Datagrams that belonged to no transfer, and refused OPENs.
    pub junk: JunkCounts,
}

impl Receiver {
    /// Binds the listening socket: UDP on `addr` (port 0: any free port), or
    /// with [`ReceiverOptions::raw_ip`] IP protocol 30 with `addr`'s port as
    /// the NETBLT port. Over UDP, `[::]` takes IPv6 and IPv4 peers both (an
    /// IPv4 peer is seen, and reported, with its IPv4 address); any other
    /// address takes its own family only.
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

    /// The flag that stops this receiver once set: the one given in
    /// [`ReceiverOptions::stop`], or a new one. Take it before serving (the
    /// serving calls take the receiver) and keep it on another thread;
    /// setting it interrupts the running transfers (their peers are told)
    /// and the serving call returns its summary.
    pub fn stop_flag(&mut self) -> Arc<AtomicBool> {
        Arc::clone(self.opts.stop.get_or_insert_with(Arc::default))
    }

    /// Stores received files below `dir` (names from the network are
    /// sanitized; a file appears only once verified, under a temporary name
    /// until then) and, with [`ReceiverOptions::serve`], lets peers fetch
    /// files from it. Memory-to-memory tests are discarded.
    pub fn serve_dir(self, dir: impl AsRef<Path>) -> Result<ReceiverSummary, Error> {
        let dir = dir.as_ref().to_path_buf();
        Self::check_dir(&dir)?;
        self.serve(Data::Dir(dir))
    }

    /// Whether [`Receiver::serve_dir`] could use `dir`: it exists and is a
    /// directory (a tool can ask before it binds or says it listens).
    pub fn check_dir(dir: &Path) -> Result<(), Error> {
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => Err(Error::Local(format!("{}: not a directory", dir.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::Local(format!(
                "{}: no such directory (create it first)",
                dir.display()
            ))),
            // F28: "no such directory" above and `local_io`'s words
            // read back as their I/O kinds.
            Err(e) => Err(crate::error::local_io(dir, &e)),
        }
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
            summary: ReceiverSummary::default(),
            have: HaveStore::default(),
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
        rate_control: o.rate_control.clone(),
        config: config(
            passive_limits(),
            death_secs(o.death_timer),
            listen.is_ipv6(),
            passive_rate(),
        ),
    }
}

/// `path` is a regular file (not a link) of `size` bytes modified at
/// `mtime` (nanoseconds), both given.
fn complete(path: &Path, size: Option<u64>, mtime: Option<i64>) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| {
        m.is_file() && Some(m.len()) == size && mtime.is_some() && mtime_ns(&m) == mtime
    })
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
    summary: ReceiverSummary,
    /// `get` clients' lists of what they have (M17).
    have: HaveStore,
}

/// What a request is answered with: the plan, the name reports use, the
/// RESPONSE, and for a directory served to `get` what its packer counts
/// (the server's report, M15).
struct Planned {
    plan: Plan,
    name: String,
    resp: Response,
    pack: Option<Arc<Mutex<FilesReport>>>,
}

impl Planned {
    fn new(plan: Plan, name: impl Into<String>, resp: Response) -> Planned {
        Planned {
            plan,
            name: name.into(),
            resp,
            pack: None,
        }
    }
}

/// What a WRITE request says about the file.
struct PutMeta {
    size: Option<u64>,
    mtime: Option<i64>,
    mode: Option<u32>,
    resume: bool,
}

impl Policy {
    /// Where a WRITE transfer's data go, and what the RESPONSE says (a
    /// partial copy to resume from).
    fn target(
        &self,
        name: &str,
        m: &PutMeta,
        peer: SocketAddr,
    ) -> Result<(Target, Response), String> {
        match &self.data {
            // A file sent to a memory-to-memory test's far end is received
            // and checked, then thrown away: legitimate (iperf3 -F sends a
            // file to a server that discards it), but the sender must not
            // think it was stored (F15 #11).
            Data::Discard => Ok((
                Target::Discard,
                Response {
                    note: Some(DISCARDED.into()),
                    ..Response::default()
                },
            )),
            Data::Dir(dir) => {
                let path = resolve(dir, name, true)?;
                // A resumed put of a file that arrived whole before (the
                // sender was stopped after the end, or is run again): the
                // same size and modification time is done already.
                if m.resume && complete(&path, m.size, m.mtime) {
                    return Err(ALREADY_THERE.into());
                }
                let mut part =
                    PartFile::open(&path, self.opts.overwrite).map_err(|e| e.peer_reason)?;
                part.ident = m.size.zip(m.mtime);
                part.mode = m.mode;
                let mut resp = Response::default();
                if m.resume {
                    match (part.journal(), part.ident) {
                        (Some(j), Some(id)) if (j.size, j.mtime) == id => {
                            let n = j.usable();
                            if n > 0 {
                                let cvs = j.cvs[..n].to_vec();
                                let from = n as u64 * UNIT;
                                resp.from = Some(from);
                                resp.prefix = Some(hex(&prefix_hash(&cvs)));
                                part.offer = Some((from, cvs));
                            }
                        }
                        (Some(_), _) => {
                            let note = "the receiver's partial copy was of another version of the file (size or modification time differ): discarded, sending it whole";
                            tracing::warn!("{name}: {note}");
                            resp.note = Some(note.into());
                        }
                        (None, _) => {}
                    }
                }
                Ok((Target::File(part), resp))
            }
            Data::Handler(h) => {
                // The name is the network's: checked as a directory
                // receiver checks it before a handler, which may well join
                // it to a directory, sees it (it had seen `../../etc/x`).
                crate::app::names::sanitize(name).map_err(str::to_string)?;
                let t = IncomingTransfer {
                    name: name.to_string(),
                    size: m.size.unwrap_or(0),
                    stream: m.size.is_none(),
                    bundle: false,
                    peer,
                };
                crate::handler::call(h, |h| h.accept(&t))?;
                Ok((Target::Handler(Arc::clone(h), t), Response::default()))
            }
        }
    }

    /// The directory peers may read from: only with `serve`.
    fn serving(&self) -> Result<&Path, String> {
        match &self.data {
            Data::Dir(d) if self.opts.serve => Ok(d.as_path()),
            _ => Err(crate::error::WIRE_NOT_SERVING.into()),
        }
    }

    fn plan(&self, inc: &Incoming, req: Request) -> Result<Planned, String> {
        match (inc.mode, req) {
            (Mode::Write, Request::Sink { size, digest }) => {
                // K16: a test may go without the end-to-end digest only when
                // every packet is authenticated.
                if !digest && !self.opts.security.is_encrypted() {
                    return Err("a memory-to-memory test without a digest needs encryption".into());
                }
                let target = match &self.data {
                    Data::Handler(_) => {
                        let m = PutMeta {
                            size: Some(size),
                            mtime: None,
                            mode: None,
                            resume: false,
                        };
                        self.target("sink", &m, inc.remote)?.0
                    }
                    _ => Target::Discard,
                };
                Ok(Planned::new(
                    Plan::Receive {
                        size: Some(size),
                        target: Some(target),
                        make: None,
                        digest,
                    },
                    "sink",
                    Response::default(),
                ))
            }
            (
                Mode::Write,
                Request::Put {
                    name,
                    size,
                    mtime,
                    mode,
                    resume,
                },
            ) => {
                let m = PutMeta {
                    size,
                    mtime,
                    mode,
                    resume,
                };
                let (target, resp) = self.target(&name, &m, inc.remote)?;
                Ok(Planned::new(
                    Plan::Receive {
                        size,
                        target: Some(target),
                        make: None,
                        digest: true,
                    },
                    name,
                    resp,
                ))
            }
            (Mode::Write, Request::Bundle { name }) => {
                let target = match &self.data {
                    Data::Dir(dir) => Target::Bundle(Box::new(
                        Unpacker::new(dir, self.opts.overwrite).map_err(|e| e.peer_reason)?,
                    )),
                    Data::Discard => Target::Discard,
                    Data::Handler(h) => {
                        // A handler sees the tar stream itself (`recv
                        // --stdout` writes it out: pipe it to `tar x`).
                        crate::app::names::sanitize(&name).map_err(str::to_string)?;
                        let t = IncomingTransfer {
                            name: name.clone(),
                            size: 0,
                            stream: true,
                            bundle: true,
                            peer: inc.remote,
                        };
                        crate::handler::call(h, |h| h.accept(&t))?;
                        Target::Handler(Arc::clone(h), t)
                    }
                };
                Ok(Planned::new(
                    Plan::Receive {
                        size: None,
                        target: Some(target),
                        make: None,
                        digest: true,
                    },
                    name,
                    Response {
                        note: matches!(self.data, Data::Discard).then(|| DISCARDED.into()),
                        ..Response::default()
                    },
                ))
            }
            // M14: what is already here, for a bundle to leave out (M18:
            // with contents hashed by the reader thread, on its first read).
            (Mode::Read, Request::Same { names, key, quick }) => {
                let Data::Dir(dir) = &self.data else {
                    return Err(NOTHING_TO_COMPARE.into());
                };
                // Its name is never shown: the check is not reported. F24:
                // with how many more transfers this receiver takes, so that
                // a sender does not split a bundle for `recv --once`.
                let s = &self.summary;
                let takes = self
                    .opts
                    .max_transfers
                    .map(|m| m.saturating_sub(s.transfers + s.refused));
                Ok(Planned::new(
                    Plan::Send {
                        reader: Input::Stream(Box::new(Listing::new(dir, names, key, quick))),
                        size: None,
                        resume: false,
                    },
                    "(check of what is here)",
                    Response {
                        takes,
                        ..Response::default()
                    },
                ))
            }
            // M17: what a `get` client has, for the `get` that follows.
            (Mode::Write, Request::Have { token, key, quick }) => {
                self.serving().map_err(|why| format!("{NOT_KEPT}: {why}"))?;
                let upload = self.have.upload(token, key, quick, inc.remote.ip());
                Ok(Planned::new(
                    Plan::Receive {
                        size: None,
                        target: Some(Target::Have(Box::new(upload))),
                        make: None,
                        digest: true,
                    },
                    "(list of what the client has)",
                    Response::default(),
                ))
            }
            (
                Mode::Read,
                Request::Get {
                    name,
                    have,
                    bundle,
                    skip,
                },
            ) => {
                let dir = self.serving()?;
                // The peer's address, not its port: each of the client's
                // transfers has a socket of its own.
                let listed = self
                    .have
                    .look_up(skip, inc.remote.ip(), std::time::Instant::now());
                serve_get(dir, name, have, bundle, listed)
            }
            _ => Err("operation does not match the NETBLT mode".into()),
        }
    }
}

/// A `get`: the file `name` below `dir`, or the directory (M15) as a bundle
/// when the client takes one (`bundle`), without the files of the client's
/// list (`listed`, M17).
fn serve_get(
    dir: &Path,
    name: String,
    have: Option<Have>,
    bundle: bool,
    listed: Listed,
) -> Result<Planned, String> {
    let path = resolve(dir, &name, false)?;
    // Never through a symbolic link: `resolve` keeps the parent
    // inside the directory, but a link as the last component
    // served whatever it pointed to (/etc/passwd, with a link
    // planted in the served directory).
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            // O_NONBLOCK: a FIFO would otherwise hold the loop
            // that serves every transfer until a writer came
            // (it is refused below; regular files ignore it).
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
    }
    .map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => "not a regular file (a symbolic link)".to_string(),
        _ => io_reason(&e),
    })?;
    let meta = file.metadata().map_err(|e| io_reason(&e))?;
    if meta.is_dir() {
        if !bundle {
            // An older client would store the tar stream as the file.
            return Err(OLD_CLIENT.into());
        }
        return plan_tree(&path, name, listed);
    }
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    let mtime = mtime_ns(&meta);
    let mut resp = Response {
        size: Some(meta.len()),
        mtime,
        mode: Some(std::os::unix::fs::PermissionsExt::mode(&meta.permissions())),
        ..Response::default()
    };
    // The client holds part of this file: the same version
    // (size and mtime) is resumed; the reader thread then checks
    // the prefix's hash before skipping it.
    let mut offer = None;
    if let Some(h) = have {
        let same = h.size == meta.len() && Some(h.mtime) == mtime;
        // F12: the client holds the whole file already; nothing is sent
        // either way (rsync's quick check, as a resumed put, M13).
        if h.is_complete() {
            return Err(if same { ALREADY_THERE } else { DIFFERS_THERE }.into());
        }
        match parse_digest(&h.prefix) {
            Some(p) if same && h.from % UNIT == 0 && h.from < meta.len() => {
                resp.from = Some(h.from);
                resp.prefix = Some(h.prefix.clone());
                offer = Some((h.from, p));
            }
            _ => {
                resp.note = Some(
                    "the file changed since the partial copy was made: discarded, sending it whole"
                        .into(),
                );
            }
        }
    }
    Ok(Planned::new(
        Plan::Send {
            reader: Input::File { file, offer },
            size: Some(meta.len()),
            resume: false,
        },
        name,
        resp,
    ))
}

/// The note a sink's RESPONSE carries for a file or a bundle (F15 #11).
pub(crate) const DISCARDED: &str =
    "the receiver discards what it receives (a memory-to-memory test's sink): checked, not stored";
/// The same before F25, naming the tool's flag.
pub(crate) const DISCARDED_OLD: &str =
    "the receiver discards what it receives (recv --sink): checked, not stored";

/// The refusal of a directory to a client older than M15: said so, rather
/// than "not a regular file", which sent users looking at the name.
const OLD_CLIENT: &str =
    "is a directory: this netblt client cannot fetch directories (a newer one can)";

/// A directory for `get` (M15): its bundle, a stream of unknown length; the
/// RESPONSE says so, with the stream's expected length when the walk was
/// quick. A `have` (a partial file) is ignored: a bundle cannot be resumed.
/// The files of the client's list are left out; a list named but not found
/// leaves nothing out, and the RESPONSE's note says so (M17).
fn plan_tree(path: &Path, name: String, listed: Listed) -> Result<Planned, String> {
    let (skip, note) = listed.into_parts();
    let served = serve_tree(path, skip)?;
    let resp = Response {
        bundle: true,
        total: served.total,
        note,
        ..Response::default()
    };
    let mut planned = Planned::new(
        Plan::Send {
            reader: Input::Stream(Box::new(served.stream)),
            size: None,
            resume: false,
        },
        name,
        resp,
    );
    planned.pack = Some(served.report);
    Ok(planned)
}

impl Policy {
    /// Whether to go on listening: fewer transfers ended or refused than
    /// `max_transfers`.
    fn more(&self) -> bool {
        let s = &self.summary;
        self.opts
            .max_transfers
            .is_none_or(|m| s.transfers + s.refused < m)
    }
}

impl Service for Policy {
    type App = Transfer;

    fn incoming(&mut self, inc: &Incoming, waker: &Arc<Waker>) -> Result<Accept<Transfer>, String> {
        let req = Request::decode(&inc.client)?;
        // Checks before the transfer the user asked for (M14, M17).
        let auxiliary = matches!(req, Request::Same { .. } | Request::Have { .. });
        let planned = self.plan(inc, req)?;
        // The peer's family, not the socket's: a dual-stack `[::]` socket
        // has IPv4 peers too, whose datagrams may be 20 bytes larger.
        let mut cfg = config(
            passive_limits(),
            death_secs(self.opts.death_timer),
            inc.remote.is_ipv6(),
            passive_rate(),
        );
        cfg.params = passive_limits_for(&inc.offer);
        let mut transfer = Transfer::new(planned.name, planned.plan, Arc::clone(waker));
        transfer.auxiliary = auxiliary;
        transfer.pack = planned.pack;
        transfer.total_hint = planned.resp.total;
        Ok(Accept {
            config: Some(cfg),
            response: planned.resp.encode(),
            transfer,
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
        if app.auxiliary {
            // A check before a bundle (M14) or a list before a `get`
            // (M17): the bundle or the `get` is the transfer.
            return true;
        }
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
        self.more()
    }

    fn refused(&mut self, inc: &Incoming, reason: &str) -> bool {
        let (name, read) = match Request::decode(&inc.client) {
            Ok(Request::Put { name, .. } | Request::Bundle { name }) => (name, false),
            Ok(Request::Get { name, .. }) => (name, true),
            Ok(Request::Sink { .. }) => ("memory-to-memory data".to_string(), false),
            // A check before a bundle or a `get` (M14, M17): the transfer
            // that follows is the one that counts. An OPEN that asks for
            // nothing we know is junk, not a transfer.
            _ => return true,
        };
        // `get --resume` of a file the client has whole: it reports success.
        let benign = reason == ALREADY_THERE;
        let s = &mut self.summary;
        s.refused += 1;
        if !benign {
            s.failed += 1;
            s.last_error = Some(Error::Local(format!("{name}: refused: {reason}")));
        }
        if let Some(f) = &self.opts.on_refused {
            f(&crate::Refusal {
                peer: inc.remote,
                name,
                reason: reason.to_string(),
                benign,
                read,
            });
        }
        self.more()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// M15: a directory asked for by a client that takes bundles is sent
    /// as one; a client older than that is told why it is refused (it would
    /// have stored the tar stream as the file); a link to a directory is
    /// never followed.
    #[test]
    fn a_directory_is_served_to_a_client_that_takes_bundles_only() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("tree/sub")).unwrap();
        std::fs::write(t.path().join("tree/sub/f"), b"x").unwrap();
        std::os::unix::fs::symlink(t.path().join("tree"), t.path().join("link")).unwrap();
        let p = serve_get(t.path(), "tree".into(), None, true, Listed::NotNamed).unwrap();
        assert!(p.resp.bundle && p.resp.size.is_none(), "{:?}", p.resp);
        assert!(p.pack.is_some());
        assert!(matches!(p.plan, Plan::Send { size: None, .. }));
        let refused = serve_get(t.path(), "tree".into(), None, false, Listed::NotNamed).err();
        assert_eq!(refused.as_deref(), Some(OLD_CLIENT));
        let link = serve_get(t.path(), "link".into(), None, true, Listed::NotNamed).err();
        assert_eq!(
            link.as_deref(),
            Some("not a regular file (a symbolic link)")
        );
        // A file is still a file, whichever the client.
        let f = serve_get(t.path(), "tree/sub/f".into(), None, true, Listed::NotNamed).unwrap();
        assert_eq!((f.resp.bundle, f.resp.size), (false, Some(1)));
    }

    /// What a served tree's stream held, as its packer counted: files
    /// sent, files left out as the client's, their bytes.
    fn sent(p: Planned) -> (u64, u64, u64) {
        let Plan::Send {
            reader: Input::Stream(mut r),
            ..
        } = p.plan
        else {
            panic!("not a stream");
        };
        std::io::copy(&mut r, &mut std::io::sink()).unwrap();
        let f = p.pack.unwrap().lock().unwrap().clone();
        (f.files, f.unchanged, f.unchanged_bytes)
    }

    /// M17: a `get` naming the client's list leaves out the files in it
    /// (one use); one naming a list the server does not have (used,
    /// unknown, another address's) sends everything and says why.
    #[test]
    fn a_get_leaves_out_the_clients_files_and_an_unknown_list_leaves_out_nothing() {
        use crate::app::bundle::walk::mtime_of;
        use crate::app::have::{Listed, LIST_LOST, TOKEN};
        use crate::app::same::Quick;
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("tree/sub")).unwrap();
        std::fs::write(t.path().join("tree/a"), b"alpha").unwrap();
        std::fs::write(t.path().join("tree/sub/b"), b"b").unwrap();
        let store = HaveStore::default();
        let key = [5u8; 32];
        let m = std::fs::symlink_metadata(t.path().join("tree/a")).unwrap();
        let a = t.path().join("tree/a");
        let d = crate::app::same::digest(&key, Quick::Times, b"tree/a", m.len(), mtime_of(&m), &a)
            .unwrap();
        let ip = std::net::IpAddr::from([127, 0, 0, 1]);
        let mut u = store.upload([1; TOKEN], key, Quick::Times, ip);
        u.push(&d).unwrap();
        u.commit();
        let now = std::time::Instant::now();
        let get = |l: Listed| serve_get(t.path(), "tree".into(), None, true, l).unwrap();
        let other = std::net::IpAddr::from([127, 0, 0, 2]);
        for listed in [
            store.look_up(Some([2; TOKEN]), ip, now),
            store.look_up(Some([1; TOKEN]), other, now),
        ] {
            let p = get(listed);
            assert_eq!(p.resp.note.as_deref(), Some(LIST_LOST));
            assert_eq!(sent(p), (2, 0, 0));
        }
        let p = get(store.look_up(Some([1; TOKEN]), ip, now));
        assert_eq!(p.resp.note, None);
        assert_eq!(sent(p), (1, 1, 5));
        // Used: the next `get` naming it gets everything.
        let p = get(store.look_up(Some([1; TOKEN]), ip, now));
        assert_eq!(p.resp.note.as_deref(), Some(LIST_LOST));
        assert_eq!(sent(p), (2, 0, 0));
    }
}
