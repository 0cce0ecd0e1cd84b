//! Encrypted mode in the driver (issue 11): the handshake and the packet
//! protection of `netblt-crypto`, wrapped around the sans-IO engine.
//!
//! The engine keeps speaking plain RFC 998. On the way out, the active
//! end's OPEN becomes a Noise initiation (the OPEN body is its payload), the
//! passive end's RESPONSE the Noise response, and every other packet is
//! sealed in place (24-byte trailer). On the way in, handshake messages are
//! read and the plain OPEN/RESPONSE rebuilt for the engine; every other
//! packet is opened in place, or dropped and counted. So a forged, replayed
//! or modified packet never reaches the engine.
//!
//! # On the wire (decision K13, K15)
//!
//! * Every packet of an encrypted session carries **Version 2** in the
//!   common header; RFC 998 peers (and `--insecure`) use Version 1 and drop
//!   Version 2 as unknown, so the two modes never mix silently.
//! * Version 2 with Type OPEN or RESPONSE is a handshake datagram: the
//!   12-byte header (Length = the whole datagram, checksum over it, ports as
//!   in the plain packet), then the envelope of docs/security.md. The XX
//!   third message (FINISH) is Type OPEN.
//! * Any other Version 2 packet is `header ‖ encrypted body ‖ counter ‖
//!   tag`: the plain packet's header with Version 2 (its Length and checksum
//!   those of the plain packet), authenticated as associated data. In XX
//!   and code mode this includes the engine's RESPONSE, which the passive
//!   end writes only once FINISH has authorized the peer (decision K20), so
//!   a Version 2 RESPONSE is a handshake message while the active end's
//!   handshake runs and a sealed packet afterwards.
//! * The IK initiation carries the active end's timestamp (TAI64N) before
//!   the OPEN body, encrypted; the passive end refuses, without answering,
//!   one that is not newer than those it accepted from that key (K19).
//! * Refusals before a session exists (unknown key, wrong mode, a peer in
//!   the other mode) are plain Version 1 REFUSED packets, so an RFC 998 or
//!   `--insecure` peer can print them. An end in encrypted mode believes a
//!   plain refusal only until the peer has proved its keys.

pub(crate) mod active;
pub(crate) mod passive;

use std::sync::Mutex;
use std::time::SystemTime;

use netblt_crypto::Tai64n;
use netblt_wire::{checksum, Packet, PacketType, Repr, HEADER_LEN};

/// Version byte of protected packets (K13).
pub(crate) const PROTECTED: u8 = 2;
/// RFC 998 packets.
pub(crate) const PLAIN: u8 = netblt_wire::VERSION;

pub(crate) const OPEN: u8 = PacketType::Open as u8;
pub(crate) const RESPONSE: u8 = PacketType::Response as u8;

/// The timestamp of a new IK initiation (K19): the wall clock, but always
/// above every one this process handed out before, so that two connections
/// opened at once, or after the clock stepped back, still carry distinct,
/// increasing timestamps (the passive end refuses a repeated one).
pub(crate) fn initiation_timestamp() -> Tai64n {
    static LAST: Mutex<Option<Tai64n>> = Mutex::new(None);
    let now = Tai64n::from_system_time(SystemTime::now());
    // A poisoned lock only means another thread panicked holding it; the
    // value inside is still a valid timestamp.
    let mut last = LAST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let t = match *last {
        Some(l) if now <= l => l.next(),
        _ => now,
    };
    *last = Some(t);
    t
}

/// What to do with a received datagram.
#[derive(Debug)]
pub(crate) enum Rx {
    /// Hand the first `n` bytes (opened in place) to the engine.
    Pass(usize),
    /// Hand this rebuilt plain packet (OPEN or RESPONSE) to the engine.
    Owned(Vec<u8>),
    /// Nothing for the engine.
    Drop,
}

/// Version and Type of a datagram, if it has a header.
pub(crate) fn kind(d: &[u8]) -> Option<(u8, u8)> {
    (d.len() >= HEADER_LEN).then(|| (d[2], d[3]))
}

/// Seals a gathered DATA packet (its header in `buf[..head]`, its payload
/// in the engine's buffer) into `buf`: the payload is encrypted from where
/// it lies, so the plaintext is never copied into the datagram (on
/// loopback that copy was 13 % of the encrypted sender's time; decision
/// G2). The bytes on the wire are those of sealing the whole packet in
/// place.
pub(crate) fn seal_gathered(
    p: &mut netblt_crypto::PacketProtection,
    buf: &mut [u8],
    head: usize,
    payload: &[u8],
) -> Option<usize> {
    *buf.get_mut(2)? = PROTECTED;
    p.seal_gathered(buf, head, payload).ok()
}

/// Writes a gathered datagram whole into `buf` (payload and padding after
/// the head): for the packets [`seal_gathered`] does not take (padded
/// ones, or before keys exist). `None` if the payload is gone or does not
/// fit.
pub(crate) fn flatten(
    buf: &mut [u8],
    g: netblt_proto::Gathered,
    payload: Option<&[u8]>,
) -> Option<usize> {
    let data = match (g.payload, payload) {
        (None, _) => &[][..],
        (Some(_), Some(d)) => d,
        (Some(_), None) => return None,
    };
    let end = g.head + data.len();
    buf.get_mut(g.head..end)?.copy_from_slice(data);
    buf.get_mut(end..end + g.pad)?.fill(0);
    Some(end + g.pad)
}

/// A big-endian u16 at `at`, or 0 if the datagram is too short (callers check
/// `kind` first; this keeps untrusted bytes from reaching an index panic
/// even if one does not).
fn be16(d: &[u8], at: usize) -> u16 {
    d.get(at..at + 2)
        .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
}

/// Local and Foreign Port of a datagram (0 for a datagram shorter than the
/// header).
pub(crate) fn ports(d: &[u8]) -> (u16, u16) {
    (be16(d, 6), be16(d, 8))
}

fn length(d: &[u8]) -> usize {
    usize::from(be16(d, 4))
}

/// The body of a plain OPEN or RESPONSE the engine wrote: its bytes after
/// the header, up to Length (a multiple of 4 for these types).
pub(crate) fn open_body(d: &[u8]) -> &[u8] {
    let len = length(d).min(d.len());
    d.get(HEADER_LEN..len).unwrap_or(&[])
}

/// The longest OPEN body a probe's padding makes (R58): a DATA packet of
/// 16,000 bytes (the tool's largest, `AUTO_PACKET_MAX`) less the header.
const PROBE_BODY_MAX: usize = 16_000 + netblt_wire::DATA_HEADER_LEN - HEADER_LEN;

/// An OPEN body without the NULs a path probe (R58) added to its client
/// string area: the fixed fields, the string and its NUL, to a multiple
/// of 4 (RFC 998 §8). A body with no NUL is left as it is.
pub(crate) fn unpadded(body: &[u8]) -> &[u8] {
    let fixed = netblt_wire::OPEN_FIXED_LEN - HEADER_LEN;
    match body
        .get(fixed..)
        .and_then(|a| a.iter().position(|&b| b == 0))
    {
        Some(nul) => &body[..(fixed + netblt_wire::round_up4(nul + 1)).min(body.len())],
        None => body,
    }
}

/// A handshake datagram `d` cut to its header's Length, and its whole
/// length if NULs followed (a path probe's padding, R58).
pub(crate) fn cut_probe_padding(d: &[u8]) -> (&[u8], Option<usize>) {
    let len = length(d);
    if len >= HEADER_LEN && len < d.len() && d[len..].iter().all(|&b| b == 0) {
        (&d[..len], Some(d.len()))
    } else {
        (d, None)
    }
}

/// The OPEN body handed to the engine: for an initiation that came padded
/// to `probed` bytes, NULs added so that the plain OPEN is as long as the
/// datagram less the sealing overhead, i.e. the plain DATA packet of the
/// size the datagram proved (R58).
pub(crate) fn probe_body(body: &[u8], probed: Option<usize>) -> Vec<u8> {
    let mut b = body.to_vec();
    if let Some(full) = probed {
        // At most what a probe of the largest packet the tool picks needs
        // (16,000 bytes): an XX peer's body is kept until its FINISH, and
        // a half-open peer must not cost 64 KB.
        let want = full
            .saturating_sub(netblt_crypto::OVERHEAD + HEADER_LEN)
            .min(PROBE_BODY_MAX);
        if want > b.len() {
            b.resize(want, 0);
        }
    }
    b
}

fn header(out: &mut [u8], version: u8, ty: u8, len: usize, local: u16, foreign: u16) {
    out[2] = version;
    out[3] = ty;
    out[4..6].copy_from_slice(&(len.min(usize::from(u16::MAX)) as u16).to_be_bytes());
    out[6..8].copy_from_slice(&local.to_be_bytes());
    out[8..10].copy_from_slice(&foreign.to_be_bytes());
    out[10..12].fill(0);
    let sum = checksum(&out[2..len]);
    out[0..2].copy_from_slice(&sum.to_be_bytes());
}

/// A handshake datagram: Version 2 header of Type `ty`, then `envelope`.
pub(crate) fn handshake_datagram(ty: u8, local: u16, foreign: u16, envelope: &[u8]) -> Vec<u8> {
    let len = HEADER_LEN + envelope.len();
    let mut out = vec![0u8; len];
    out[HEADER_LEN..].copy_from_slice(envelope);
    header(&mut out, PROTECTED, ty, len, local, foreign);
    out
}

/// The plain OPEN or RESPONSE (Version 1) with `body`, as the engine
/// expects it (RFC 998 §8: "all packets are a multiple of 4 bytes").
pub(crate) fn plain_open(ty: u8, local: u16, foreign: u16, body: &[u8]) -> Vec<u8> {
    let len = HEADER_LEN + body.len();
    let mut out = vec![0u8; netblt_wire::round_up4(len)];
    out[HEADER_LEN..len].copy_from_slice(body);
    header(&mut out, PLAIN, ty, len, local, foreign);
    out
}

/// A plain packet carrying a reason string (REFUSED, QUIT), at most 200
/// bytes of it, NULs left out.
fn with_reason(local: u16, foreign: u16, reason: &str, repr: fn(&[u8]) -> Repr<'_>) -> Vec<u8> {
    let reason: Vec<u8> = reason.bytes().filter(|&b| b != 0).take(200).collect();
    let p = Packet {
        local_port: local,
        foreign_port: foreign,
        repr: repr(&reason),
    };
    let mut out = vec![0u8; p.buffer_len()];
    match p.emit(&mut out) {
        Ok(n) => {
            out.truncate(n);
            out
        }
        Err(_) => Vec::new(),
    }
}

/// A plain REFUSED from `local` to `foreign` with `reason`.
pub(crate) fn refused(local: u16, foreign: u16, reason: &str) -> Vec<u8> {
    with_reason(local, foreign, reason, |r| Repr::Refused { reason: r })
}

/// A plain QUIT (the active end telling the passive end why it gives up
/// during the handshake).
pub(crate) fn quit(local: u16, foreign: u16, reason: &str) -> Vec<u8> {
    with_reason(local, foreign, reason, |r| Repr::Quit { reason: r })
}

/// The reason of a plain QUIT, ABORT or REFUSED.
pub(crate) fn plain_reason(d: &[u8]) -> Option<String> {
    match Packet::parse(d).ok()?.repr {
        Repr::Quit { reason } | Repr::Abort { reason } | Repr::Refused { reason } => {
            Some(String::from_utf8_lossy(reason).into_owned())
        }
        _ => None,
    }
}

/// What a sender in the other mode is told, in a plain REFUSED (the
/// sender's program adds what to do: [`crate::PeerReason`]).
pub(crate) const NEEDS_ENCRYPTION: &str = "this receiver requires encryption";
pub(crate) const IS_INSECURE: &str = "this receiver is not encrypted (plain RFC 998)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebuilt_open_parses_and_refusals_carry_their_reason() {
        let body = [0u8; 36];
        let p = plain_open(RESPONSE, 5, 6, &body);
        assert!(Packet::parse(&p).is_ok(), "{:?}", Packet::parse(&p));
        assert_eq!(ports(&p), (5, 6));
        let r = refused(1, 2, "no");
        assert_eq!(plain_reason(&r).as_deref(), Some("no"));
        let q = quit(1, 2, "code");
        assert_eq!(plain_reason(&q).as_deref(), Some("code"));
        let h = handshake_datagram(OPEN, 1, 2, &[9; 30]);
        assert_eq!(kind(&h), Some((PROTECTED, OPEN)));
        assert_eq!(h.len(), 42);
    }

    /// R58: the probe's padding is taken off the OPEN body before the
    /// Noise payload, cut off the datagram at the passive end, and given
    /// back to its engine as the OPEN's own, less the sealing overhead.
    #[test]
    fn a_probe_s_padding_moves_from_the_open_to_the_datagram_and_back() {
        let mut body = vec![0u8; 24];
        body.extend_from_slice(b"netblt\0\0");
        let plain = body.clone();
        body.resize(1448 - HEADER_LEN, 0);
        assert_eq!(unpadded(&body), &plain[..]);
        assert_eq!(unpadded(&plain), &plain[..]);
        assert_eq!(unpadded(&[1, 2, 3]), &[1, 2, 3], "no NUL: left alone");
        let mut d = handshake_datagram(OPEN, 1, 2, &[9; 200]);
        assert_eq!(cut_probe_padding(&d), (&d[..], None));
        let message = d.clone();
        d.resize(1472, 0);
        assert_eq!(cut_probe_padding(&d), (&message[..], Some(1472)));
        // Anything but NULs past Length is not a probe's padding.
        d[1471] = 1;
        assert_eq!(cut_probe_padding(&d).1, None);
        // 1472 - 20 sealing - 12 header: the engine's plain OPEN is 1452
        // bytes, a DATA packet of 1428.
        let handed = probe_body(&plain, Some(1472));
        assert_eq!(handed.len(), 1440);
        assert_eq!(&handed[..plain.len()], &plain[..]);
        assert_eq!(probe_body(&plain, None), plain);
        assert_eq!(probe_body(&plain, Some(40)), plain, "never shortened");
        assert_eq!(probe_body(&plain, Some(65_000)).len(), 16_012, "capped");
    }

    #[test]
    fn initiation_timestamps_increase_even_when_taken_at_once() {
        let ts: Vec<Tai64n> = (0..1000).map(|_| initiation_timestamp()).collect();
        assert!(ts.windows(2).all(|w| w[0] < w[1]));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| (0..500).map(|_| initiation_timestamp()).collect::<Vec<_>>())
            })
            .collect();
        let mut all: Vec<Tai64n> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n, "a timestamp was handed out twice");
    }
}
