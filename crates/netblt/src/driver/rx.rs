//! Incoming datagrams: `recvmmsg` into [`netblt_udp::BATCH`] buffers of
//! 64 KiB, each holding one datagram or one GRO train, allocated once.

use std::io::{self, IoSliceMut};
use std::net::{IpAddr, SocketAddr};

use netblt_udp::{DatagramSocket, RecvMeta, BATCH, MAX_DATAGRAM_BUFFER};

pub(crate) struct RxBuffers {
    storage: Vec<u8>,
    meta: [RecvMeta; BATCH],
    filled: usize,
}

impl RxBuffers {
    /// Buffers filled by one call at most.
    pub(crate) const CAPACITY: usize = BATCH;

    pub(crate) fn new() -> RxBuffers {
        RxBuffers {
            storage: vec![0; BATCH * MAX_DATAGRAM_BUFFER],
            meta: [RecvMeta::default(); BATCH],
            filled: 0,
        }
    }

    /// One receive syscall; returns how many buffers were filled (0 when
    /// nothing was queued). Fewer than [`RxBuffers::CAPACITY`] means the
    /// socket's queue is now empty: `recvmmsg` without waiting stops only
    /// there.
    pub(crate) fn recv(&mut self, sock: &dyn DatagramSocket) -> io::Result<usize> {
        let mut chunks = self.storage.chunks_exact_mut(MAX_DATAGRAM_BUFFER);
        let mut bufs: [IoSliceMut<'_>; BATCH] =
            std::array::from_fn(|_| IoSliceMut::new(chunks.next().unwrap_or_default()));
        self.filled = 0;
        match sock.recv(&mut bufs, &mut self.meta) {
            Ok(n) => {
                self.filled = n.min(BATCH);
                Ok(self.filled)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// The datagrams of the last [`recv`](Self::recv), with their source and
    /// the local address they were sent to (when the socket can tell: see
    /// `locals.rs`), writable (encrypted mode opens them in place).
    pub(crate) fn datagrams_mut(
        &mut self,
    ) -> impl Iterator<Item = (SocketAddr, Option<IpAddr>, &mut [u8])> + '_ {
        let meta = &self.meta[..self.filled];
        self.storage
            .chunks_exact_mut(MAX_DATAGRAM_BUFFER)
            .zip(meta.iter())
            .flat_map(|(buf, m)| {
                let len = m.len.min(buf.len());
                let stride = if m.stride == 0 { len.max(1) } else { m.stride };
                let (addr, dst) = (m.addr, m.dst_ip);
                buf[..len].chunks_mut(stride).map(move |d| (addr, dst, d))
            })
    }
}

impl Default for RxBuffers {
    fn default() -> Self {
        RxBuffers::new()
    }
}
