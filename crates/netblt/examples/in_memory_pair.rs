//! The engine alone (`netblt::proto`, i.e. `netblt-proto`): two NETBLT
//! connections joined by an in-memory "wire" with a fixed delay, driven with
//! explicit time. No sockets, no threads, no clock: the loop jumps from one
//! event to the next, so the run is the same every time. This is how to put
//! NETBLT on another transport or runtime.
//!
//! ```sh
//! cargo run -p netblt --example in_memory_pair
//! ```

use std::collections::VecDeque;
use std::net::SocketAddr;

use netblt::proto::{
    Config, Connection, DatagramEvent, Duration, Endpoint, Event, Instant, Mode, TransferParams,
};

/// One way of the wire: datagrams with their arrival time, in order.
type Wire = VecDeque<(Instant, Vec<u8>)>;

fn main() {
    let delay = Duration::from_millis(10);
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let params = TransferParams {
        packet_size: 1400,
        buffer_size: 256 * 1024,
        burst_size: 16,
        burst_interval_ms: 1,
        max_buffers: 4,
        checksum_data: true,
    };
    let config = Config {
        params,
        ..Config::default()
    };
    let (a_addr, b_addr): (SocketAddr, SocketAddr) = (
        "10.0.0.1:5000".parse().unwrap(),
        "10.0.0.2:9998".parse().unwrap(),
    );

    // A: the active end, sending (WRITE). B: a passive endpoint on port 9998.
    let mut now = Instant::ZERO;
    let mut a = Connection::connect(
        config.clone(),
        Mode::Write,
        0x5eed,
        a_addr.port(),
        b_addr.port(),
        Some(data.len() as u64),
        b"in-memory example".to_vec(),
        now,
    )
    .expect("valid parameters");
    let mut b = Endpoint::new(config, b_addr.port());
    let (mut to_b, mut to_a): (Wire, Wire) = (VecDeque::new(), VecDeque::new());
    let mut buf = vec![0u8; 65_536];
    let mut offset = 0; // next byte of `data` to hand to A
    let mut received = Vec::with_capacity(data.len());

    loop {
        // Application on A: give the engine buffers while it wants them.
        let bsz = params.buffer_size as usize;
        while a.wants_buffer() && offset < data.len() {
            let end = (offset + bsz).min(data.len());
            a.push_buffer(data[offset..end].to_vec(), end == data.len())
                .expect("the engine asked for it");
            offset = end;
        }
        while let Some(ev) = a.poll_event() {
            if let Event::Finished = ev {
                println!("A: finished at t = {:?}", now.since_zero());
            }
        }
        // Application on B: take buffers, give their storage back.
        for h in b.handles() {
            let Some(c) = b.connection_mut(h) else {
                continue;
            };
            while let Some(ev) = c.poll_event() {
                match ev {
                    Event::BufferReceived { data, .. } => {
                        received.extend_from_slice(&data);
                        c.recycle(data);
                    }
                    Event::Connected { params, .. } => println!("B: open, {params:?}"),
                    _ => {}
                }
            }
        }
        // Transmit everything due now onto the wire.
        while let Some(n) = a.poll_transmit(now, &mut buf) {
            to_b.push_back((now + delay, buf[..n].to_vec()));
        }
        while let Some((_, n)) = b.poll_transmit(now, &mut buf) {
            to_a.push_back((now + delay, buf[..n].to_vec()));
        }
        let b_done = b
            .handles()
            .iter()
            .all(|&h| b.connection(h).is_none_or(|c| c.is_closed()));
        if a.is_closed() && b_done && to_a.is_empty() && to_b.is_empty() {
            break;
        }
        // Jump to the next event: an arrival or a timer.
        let next = [
            to_b.front().map(|d| d.0),
            to_a.front().map(|d| d.0),
            a.poll_timeout(),
            b.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(next) = next else { break };
        now = now.max(next);
        while to_b.front().is_some_and(|d| d.0 <= now) {
            let Some((_, d)) = to_b.pop_front() else {
                break;
            };
            if let Some(DatagramEvent::NewConnection(inc)) = b.handle(now, a_addr, &d) {
                b.accept(inc, None, b"ok".to_vec(), now)
                    .expect("acceptable offer");
            }
        }
        while to_a.front().is_some_and(|d| d.0 <= now) {
            let Some((_, d)) = to_a.pop_front() else {
                break;
            };
            a.handle_datagram(now, &d);
        }
        if a.poll_timeout().is_some_and(|t| t <= now) {
            a.handle_timeout(now);
        }
        b.handle_timeout(now);
    }
    assert_eq!(received, data, "every byte arrived, in order");
    let st = a.stats();
    println!(
        "moved {} bytes in {:?} of simulated time: {} DATA packets, {} resent",
        received.len(),
        now.since_zero(),
        st.data_packets_sent,
        st.data_packets_retransmitted
    );
}
