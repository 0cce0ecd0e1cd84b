//! Helpers shared by the loopback tests.
#![allow(dead_code)]

use std::{
    io::{ErrorKind, IoSliceMut},
    time::{Duration, Instant},
};

use netblt_udp::{DatagramSocket, RecvMeta, MAX_DATAGRAM_BUFFER};

/// Deterministic payload: byte i is (tag + i) mod 251, so segments differ and misorder shows.
pub(crate) fn pattern(tag: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((usize::from(tag) + i) % 251) as u8)
        .collect()
}

/// What one test receive collected: every datagram (GRO trains split by stride) and every meta.
#[derive(Debug, Default)]
pub(crate) struct Received {
    pub(crate) datagrams: Vec<Vec<u8>>,
    pub(crate) metas: Vec<RecvMeta>,
}

/// Receives until `want` datagrams accepted by `keep` have arrived, or a 5 s safety deadline
/// passes (then the caller's assertions fail and show what did arrive). `buf_len` sets the size
/// of each receive buffer.
pub(crate) fn recv_filtered<S: DatagramSocket>(
    rx: &S,
    want: usize,
    buf_len: usize,
    keep: impl Fn(&[u8]) -> bool,
) -> Received {
    let mut storage = vec![vec![0u8; buf_len]; 4];
    let mut out = Received::default();
    let deadline = Instant::now() + Duration::from_secs(5);
    while out.datagrams.len() < want && Instant::now() < deadline {
        let mut bufs: Vec<IoSliceMut<'_>> =
            storage.iter_mut().map(|b| IoSliceMut::new(b)).collect();
        let mut meta = [RecvMeta::default(); 4];
        match rx.recv(&mut bufs, &mut meta) {
            Ok(n) => {
                for (m, b) in meta.iter().zip(&bufs).take(n) {
                    let segs: Vec<Vec<u8>> = m.segments(b).map(<[u8]>::to_vec).collect();
                    if segs.first().is_some_and(|s| keep(s)) {
                        out.metas.push(*m);
                        out.datagrams.extend(segs);
                    }
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let _ = rx.wait(true, false, Some(Duration::from_millis(50)));
            }
            Err(e) => panic!("recv failed: {e}"),
        }
    }
    out
}

/// [`recv_filtered`] accepting everything, with 64 KiB buffers.
pub(crate) fn recv_n<S: DatagramSocket>(rx: &S, want: usize) -> Received {
    recv_filtered(rx, want, MAX_DATAGRAM_BUFFER, |_| true)
}

/// True when this build uses the Linux fast path (GSO/GRO/mmsg available to try).
pub(crate) fn fast_path() -> bool {
    cfg!(all(target_os = "linux", not(feature = "portable")))
}
