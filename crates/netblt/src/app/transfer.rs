//! One connection's application side, whichever end and direction: it
//! feeds the engine buffers from a [`Source`] or hands received buffers to a
//! [`Sink`], and collects what the report needs. Both drivers (active and
//! passive) call [`Transfer::drive`] after every batch of engine input.

use std::sync::{Arc, Mutex};

use netblt_proto::{Connection, ConnectionError, Event, Instant, TransferParams};

use super::bundle::FilesReport;
use super::meta::Response;
use super::partial::parse_digest;
use super::sink::{Output, Sink, Target};
use super::source::{Input, Source};
use super::{AppError, Kind, DIGEST_LEN};
use crate::driver::meter::AppGauge;
use crate::driver::{Application, Waker};

/// Makes the writer's target from the peer's RESPONSE (READ mode: the
/// file's size, mtime and whether a resume was accepted).
pub(crate) type MakeTarget = Box<dyn FnOnce(&Response) -> Result<Target, AppError> + Send>;

/// What this end does with the data, before the connection opens.
pub(crate) enum Plan {
    /// Send `size` bytes read from `reader` (`None`: a stream, to its end).
    /// `resume`: the RESPONSE may offer a partial copy to continue (the
    /// reader must then be an `Input::File`).
    Send {
        reader: Input,
        size: Option<u64>,
        resume: bool,
    },
    /// Receive into `target`; `size` is known from the OPEN (or `None`: a
    /// stream), or arrives in the RESPONSE (`get`), when `target` is made by
    /// `make`.
    Receive {
        size: Option<u64>,
        target: Option<Target>,
        make: Option<MakeTarget>,
        /// A BLAKE3 digest follows the data (false only for a digest-less
        /// sink in an encrypted session, decision K16).
        digest: bool,
    },
}

enum Data {
    Planned(Plan),
    Sending(Source),
    Receiving(Sink),
    Gone,
}

/// See the module docs.
pub(crate) struct Transfer {
    /// File name, or "sink".
    pub(crate) name: String,
    /// This end sends the data.
    pub(crate) sender: bool,
    data: Data,
    stalled: Option<(Vec<u8>, bool)>,
    waker: Arc<Waker>,
    /// Negotiated parameters, once open.
    pub(crate) params: Option<TransferParams>,
    /// The file's size (without the digest).
    pub(crate) size: Option<u64>,
    pub(crate) digest: Option<[u8; DIGEST_LEN]>,
    /// Receiver: the digest matched and the file is in place.
    pub(crate) verified: bool,
    pub(crate) app_error: Option<AppError>,
    pub(crate) conn_error: Option<ConnectionError>,
    pub(crate) finished: bool,
    /// Payload bytes handed over so far (progress).
    pub(crate) moved: u64,
    /// What the loop's meter needs (why the sender waited).
    gauge: AppGauge,
    /// A resumed transfer: bytes that were already at the receiver.
    pub(crate) resumed_from: Option<u64>,
    /// Something the user should know (a partial copy discarded).
    pub(crate) note: Option<String>,
    /// A bundle's receiver: what was stored and what failed.
    pub(crate) files: Option<FilesReport>,
    /// A bundle's sender: what the packer sent and skipped so far.
    pub(crate) pack: Option<Arc<Mutex<FilesReport>>>,
    /// A stream's expected length, for progress only.
    pub(crate) total_hint: Option<u64>,
    /// A passive end's reply to a check of what is there (M14): not one of
    /// the transfers `max_transfers` counts, nor reported.
    pub(crate) auxiliary: bool,
}

impl Transfer {
    pub(crate) fn new(name: impl Into<String>, plan: Plan, waker: Arc<Waker>) -> Transfer {
        let size = match &plan {
            Plan::Send { size, .. } => *size,
            Plan::Receive { size, .. } => *size,
        };
        Transfer {
            name: name.into(),
            sender: matches!(plan, Plan::Send { .. }),
            data: Data::Planned(plan),
            stalled: None,
            waker,
            params: None,
            size,
            digest: None,
            verified: false,
            app_error: None,
            conn_error: None,
            finished: false,
            moved: 0,
            gauge: AppGauge::default(),
            resumed_from: None,
            note: None,
            files: None,
            pack: None,
            total_hint: None,
            auxiliary: false,
        }
    }

    /// A bundle's files, as this end knows them.
    pub(crate) fn files_report(&self) -> Option<FilesReport> {
        if let Some(p) = &self.pack {
            return p.lock().ok().map(|r| r.clone());
        }
        self.files.clone()
    }

    fn fail(&mut self, now: Instant, conn: &mut Connection, e: AppError) {
        if !conn.is_closed() {
            conn.abort(now, &e.peer_reason);
        }
        if self.app_error.is_none() {
            self.app_error = Some(e);
        }
    }

    fn on_connected(
        &mut self,
        now: Instant,
        conn: &mut Connection,
        params: TransferParams,
        peer_client: &[u8],
    ) {
        self.params = Some(params);
        let bsz = params.buffer_size as usize;
        let plan = match std::mem::replace(&mut self.data, Data::Gone) {
            Data::Planned(p) => p,
            other => {
                self.data = other;
                return;
            }
        };
        let response = Response::decode(peer_client);
        if let Some(n) = &response.note {
            // An older sink's note named the tool's flag (F25).
            let n = match n.as_str() {
                crate::receiver::DISCARDED_OLD => crate::receiver::DISCARDED,
                n => n,
            };
            self.note = Some(n.to_string());
        }
        match plan {
            Plan::Send {
                mut reader,
                size,
                resume,
            } => {
                if let (true, Input::File { offer, .. }) = (resume, &mut reader) {
                    if let (Some(from), Some(p)) = (
                        response.from,
                        response.prefix.as_deref().and_then(parse_digest),
                    ) {
                        *offer = Some((from, p));
                    }
                }
                let src = Source::spawn(
                    reader,
                    self.name.clone(),
                    size,
                    bsz,
                    Arc::clone(&self.waker),
                );
                self.data = Data::Sending(src);
            }
            Plan::Receive {
                size,
                target,
                make,
                digest,
            } => {
                let size = size.or(response.size);
                self.size = size;
                // A directory's bundle (M15): its expected length, when
                // the server knew it, for the progress bar only.
                self.total_hint = self.total_hint.or(response.total);
                let target = match (target, make) {
                    (Some(t), _) => Ok(t),
                    (None, Some(f)) => f(&response),
                    (None, None) => Ok(Target::Discard),
                };
                match target {
                    Ok(t) => {
                        self.data =
                            Data::Receiving(Sink::spawn(size, t, digest, Arc::clone(&self.waker)))
                    }
                    Err(e) => self.fail(now, conn, e),
                }
            }
        }
    }

    /// Moves data between the engine and the reader/writer thread and reads
    /// the connection's events. Call after every engine input.
    pub(crate) fn drive(&mut self, now: Instant, conn: &mut Connection) {
        // Writer thread first: recycled storage, the final verdict.
        if let Data::Receiving(sink) = &self.data {
            let mut verdict = None;
            while let Some(o) = sink.poll() {
                match o {
                    Output::Storage(v) => conn.recycle(v),
                    Output::Verdict(r) => verdict = Some(r),
                    Output::From(f) => self.resumed_from = Some(f),
                    Output::Files(r) => self.files = Some(r),
                }
            }
            match verdict {
                Some(Ok((d, len))) => {
                    self.digest = d;
                    self.size = Some(len);
                    self.verified = true;
                    match self.files.as_ref().filter(|f| f.failures() > 0) {
                        // Some entries of a bundle could not be stored: the
                        // others are in place, and the sender must hear
                        // which failed. ABORT is sent once; QUIT is
                        // retransmitted until acknowledged (RFC 998
                        // §5.3.2), so the list reaches the sender.
                        Some(f) => {
                            let reason = f.quit_reason();
                            let first = reason.lines().next().unwrap_or_default().to_string();
                            conn.quit(now, &reason);
                            self.app_error.get_or_insert(AppError::new(
                                Kind::Failed,
                                first,
                                reason,
                            ));
                        }
                        None => conn.confirm_last(now, Ok(())),
                    }
                }
                Some(Err(e)) => {
                    if !conn.is_closed() {
                        conn.confirm_last(now, Err(e.peer_reason.clone()));
                    }
                    self.app_error.get_or_insert(e);
                }
                None => {}
            }
        }
        // A buffer the writer had no room for: nothing else moves until it
        // goes (the engine then issues no new GO: client flow control).
        if let Some((data, last)) = self.stalled.take() {
            if let Data::Receiving(sink) = &self.data {
                if let Err(back) = sink.offer(data, last) {
                    self.stalled = Some(back);
                    return;
                }
            }
        }
        while let Some(ev) = conn.poll_event() {
            match ev {
                Event::Connected {
                    params,
                    peer_client,
                    ..
                } => self.on_connected(now, conn, params, &peer_client),
                Event::BufferReceived { data, last, .. } => {
                    self.moved += data.len() as u64;
                    if let Data::Receiving(sink) = &self.data {
                        if let Err(back) = sink.offer(data, last) {
                            self.stalled = Some(back);
                            break;
                        }
                    }
                }
                Event::BufferAcked { storage, .. } => {
                    self.moved += storage.len() as u64;
                    self.gauge.acked_packets += packets(storage.len(), conn);
                    if let Data::Sending(src) = &self.data {
                        src.recycle(storage);
                    }
                }
                Event::Finished => self.finished = true,
                Event::PeerQuit { reason } => {
                    self.conn_error
                        .get_or_insert(ConnectionError::PeerQuit { reason });
                }
                Event::Closed(e) => {
                    self.conn_error.get_or_insert(e);
                }
                _ => {}
            }
        }
        if let Data::Sending(src) = &mut self.data {
            while conn.wants_buffer() {
                match src.try_next() {
                    Some(Ok((buf, last))) => {
                        let n = packets(buf.len(), conn);
                        if let Err(e) = conn.push_buffer(buf, last) {
                            let e = AppError::new(
                                Kind::Failed,
                                format!("engine refused a buffer: {e}"),
                                "internal error",
                            );
                            return self.fail(now, conn, e);
                        }
                        self.gauge.pushed_packets += n;
                        self.gauge.last_pushed |= last;
                    }
                    Some(Err(e)) => return self.fail(now, conn, e),
                    None => break,
                }
            }
            self.gauge.starved = conn.wants_buffer() && !src.done;
            if self.digest.is_none() {
                self.digest = src.digest();
            }
            if self.resumed_from.is_none() {
                self.resumed_from = src.resumed_from();
            }
        }
    }

    /// Payload bytes moved (those already there on a resume included),
    /// without the digest.
    pub(crate) fn progress(&self) -> u64 {
        let m = self.moved + self.resumed_from.unwrap_or(0);
        self.size.map_or(m, |s| m.min(s))
    }

    /// After the connection closed: stop the threads (a writer without a
    /// verdict removes its temporary file) and wait for them.
    pub(crate) fn settle(&mut self) {
        self.stalled = None;
        match std::mem::replace(&mut self.data, Data::Gone) {
            Data::Receiving(mut sink) => {
                sink.stop();
                // A verdict may have raced the close.
                while let Some(o) = sink.poll() {
                    if let Output::Files(r) = &o {
                        self.files = Some(r.clone());
                    }
                    if let Output::Verdict(r) = o {
                        match r {
                            Ok((d, len)) => {
                                self.digest = d;
                                self.size = Some(len);
                                self.verified = true;
                            }
                            Err(e) => {
                                self.app_error.get_or_insert(e);
                            }
                        }
                    }
                }
            }
            Data::Sending(mut src) => {
                if self.digest.is_none() {
                    self.digest = src.digest();
                }
                if self.size.is_none() && src.done {
                    // A stream: its length is known now.
                    self.size = Some(src.bytes_read());
                }
                src.stop();
            }
            _ => {}
        }
    }

    /// Success, as this end can tell: the connection ended well and, for a
    /// receiver, the data were verified.
    pub(crate) fn succeeded(&self, conn: &Connection) -> bool {
        let ok = matches!(conn.result(), Some(Ok(()))) && self.app_error.is_none();
        if self.sender {
            ok
        } else {
            ok && self.verified
        }
    }
}

impl Application for Transfer {
    fn drive(&mut self, now: Instant, conn: &mut Connection) {
        Transfer::drive(self, now, conn);
    }

    fn fail_locally(&mut self, e: AppError) {
        // A connection that already ended for a reason the peer gave (a
        // QUIT listing a bundle's failed files) keeps it: a later "port
        // unreachable" while dallying only says the peer has gone since.
        if matches!(self.conn_error, Some(ConnectionError::PeerQuit { .. })) {
            return;
        }
        self.app_error.get_or_insert(e);
    }

    fn settle(&mut self) {
        Transfer::settle(self);
    }

    fn gauge(&self) -> AppGauge {
        AppGauge {
            writer_behind: self.stalled.is_some(),
            ..self.gauge
        }
    }
}

/// DATA packets in a buffer of `len` bytes, as the engine counts them.
fn packets(len: usize, conn: &Connection) -> u64 {
    let psz = usize::from(conn.params().packet_size.max(1));
    len.div_ceil(psz).max(1) as u64
}
