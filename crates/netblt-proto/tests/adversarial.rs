//! Never panic on network input: well-formed but hostile packets (any field
//! value, any order, any time) thrown at connections in every role and
//! state. The wire fuzzer covers malformed bytes; this covers what parses.

mod pair;

use netblt_proto::{Config, Connection, Duration, Instant, Mode, TransferParams};
use netblt_wire::{
    ControlMessage, ControlWriter, DataRepr, FeedbackRepr, Mode as WireMode, NullAckRepr, OpenRepr,
    Packet, Repr,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Hostile {
    Open {
        uid: u32,
        psz: u16,
        bsz: u32,
        bs: u16,
        bi: u16,
        nb: u16,
        write: bool,
    },
    Response {
        uid: u32,
        psz: u16,
        bsz: u32,
        bs: u16,
        bi: u16,
        nb: u16,
    },
    Data {
        ldata: bool,
        buffer: u32,
        ack: u16,
        packet: u16,
        last: bool,
        len: usize,
    },
    NullAck {
        ack: u16,
        bs: u16,
        bi: u16,
    },
    Control(Vec<(u8, u16, u32, Vec<u16>)>),
    Simple(u8),
    Feedback(FeedbackRepr),
}

fn hostile() -> impl Strategy<Value = Hostile> {
    prop_oneof![
        (
            any::<u32>(),
            any::<u16>(),
            any::<u32>(),
            any::<u16>(),
            any::<u16>(),
            any::<u16>(),
            any::<bool>()
        )
            .prop_map(|(uid, psz, bsz, bs, bi, nb, write)| Hostile::Open {
                uid,
                psz,
                bsz,
                bs,
                bi,
                nb,
                write
            }),
        (
            any::<u32>(),
            any::<u16>(),
            any::<u32>(),
            any::<u16>(),
            any::<u16>(),
            any::<u16>()
        )
            .prop_map(|(uid, psz, bsz, bs, bi, nb)| Hostile::Response {
                uid,
                psz,
                bsz,
                bs,
                bi,
                nb
            }),
        (
            any::<bool>(),
            0u32..6,
            any::<u16>(),
            prop_oneof![0u16..20, any::<u16>()],
            any::<bool>(),
            0usize..1200
        )
            .prop_map(|(ldata, buffer, ack, packet, last, len)| Hostile::Data {
                ldata,
                buffer,
                ack,
                packet,
                last,
                len
            }),
        (any::<u16>(), any::<u16>(), any::<u16>()).prop_map(|(ack, bs, bi)| Hostile::NullAck {
            ack,
            bs,
            bi
        }),
        prop::collection::vec(
            (
                0u8..3,
                any::<u16>(),
                0u32..8,
                prop::collection::vec(any::<u16>(), 0..40)
            ),
            0..6
        )
        .prop_map(Hostile::Control),
        (2u8..12).prop_map(Hostile::Simple),
        (
            (0u32..8, any::<u16>(), any::<u32>()),
            (any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>())
        )
            .prop_map(|((eb, ep, hold), (ap, ab, lost, seq))| Hostile::Feedback(
                FeedbackRepr {
                    echo_buffer: eb,
                    echo_packet: ep,
                    hold_us: hold,
                    arrived_packets: ap,
                    arrived_bytes: ab,
                    lost_packets: lost,
                    seq,
                }
            )),
    ]
}

fn emit(h: &Hostile, from: u16, to: u16) -> Vec<u8> {
    let payload = vec![0x5a; 1200];
    let open = |uid, psz, bsz, bs, bi, nb, write| OpenRepr {
        uid,
        buffer_size: bsz,
        transfer_size: 0,
        data_packet_size: psz,
        burst_size: bs,
        burst_interval_ms: bi,
        death_timer_s: 5,
        checksum_data: false,
        mode: if write {
            WireMode::Write
        } else {
            WireMode::Read
        },
        rate_feedback: write,
        receiver_offers: false,
        path_probe: false,
        padded_len: 0,
        max_outstanding: nb,
        client: b"x",
    };
    let repr = match h {
        Hostile::Open {
            uid,
            psz,
            bsz,
            bs,
            bi,
            nb,
            write,
        } => Repr::Open(open(*uid, *psz, *bsz, *bs, *bi, *nb, *write)),
        Hostile::Response {
            uid,
            psz,
            bsz,
            bs,
            bi,
            nb,
        } => Repr::Response(open(*uid, *psz, *bsz, *bs, *bi, *nb, true)),
        Hostile::Data {
            ldata,
            buffer,
            ack,
            packet,
            last,
            len,
        } => {
            let d = DataRepr {
                buffer: *buffer,
                high_ack: *ack,
                packet: *packet,
                last_buffer: *last,
                data_checksum: 0,
                data: &payload[..*len],
            };
            if *ldata {
                Repr::LData(d)
            } else {
                Repr::Data(d)
            }
        }
        Hostile::NullAck { ack, bs, bi } => Repr::NullAck(NullAckRepr {
            high_ack: *ack,
            burst_size: *bs,
            burst_interval_ms: *bi,
        }),
        Hostile::Control(msgs) => {
            let mut buf = vec![0u8; 4096];
            let mut w = ControlWriter::new(&mut buf).unwrap();
            for (t, seq, buffer, pkts) in msgs {
                let m = match t {
                    0 => ControlMessage::Go {
                        seq: *seq,
                        buffer: *buffer,
                    },
                    1 => ControlMessage::Ok {
                        seq: *seq,
                        buffer: *buffer,
                        burst_size: 0,
                        burst_interval_ms: 0,
                        control_timer_ms: *seq,
                    },
                    _ => ControlMessage::Resend {
                        seq: *seq,
                        buffer: *buffer,
                        packets: pkts.clone(),
                    },
                };
                let _ = w.push(&m);
            }
            let n = w.finish(from, to);
            buf.truncate(n);
            return buf;
        }
        Hostile::Simple(t) => match t {
            2 => Repr::Keepalive,
            3 => Repr::Quit { reason: b"q" },
            4 => Repr::QuitAck,
            5 => Repr::Abort { reason: b"a" },
            10 => Repr::Refused { reason: b"r" },
            _ => Repr::Done,
        },
        Hostile::Feedback(f) => Repr::Feedback(*f),
    };
    let p = Packet {
        local_port: from,
        foreign_port: to,
        repr,
    };
    let mut buf = vec![0u8; p.buffer_len()];
    let n = p.emit(&mut buf).unwrap();
    buf.truncate(n);
    buf
}

fn config() -> Config {
    Config {
        params: TransferParams {
            packet_size: 100,
            buffer_size: 1000,
            burst_size: 4,
            burst_interval_ms: 1,
            max_buffers: 3,
            checksum_data: false,
        },
        death_timeout: Duration::from_secs(3),
        // Rate control on: hostile FEEDBACKs reach the controller.
        rate_feedback: true,
        rate: netblt_proto::RateConfig {
            policy: netblt_proto::Policy::Fair,
            ..Default::default()
        },
        ..Config::default()
    }
}

/// Drives `c` with hostile input interleaved with its own timers; it must
/// neither panic nor produce an oversized datagram, and its timeout must
/// never go backwards past `now` forever (no busy loop).
fn abuse(mut c: Connection, inputs: &[(u16, Hostile)], feed_data: bool) {
    let mut now = Instant::ZERO;
    let mut buf = vec![0u8; 70_000];
    for (gap, h) in inputs {
        now += Duration::from_micros(u64::from(*gap) * 10);
        let bytes = emit(h, c.remote_port(), c.local_port());
        c.handle_datagram(now, &bytes);
        if c.poll_timeout().is_some_and(|t| t <= now) {
            c.handle_timeout(now);
        }
        let mut sent = 0;
        while let Some(n) = c.poll_transmit(now, &mut buf) {
            assert!(n <= c.max_datagram_size());
            sent += 1;
            assert!(sent < 10_000, "transmit loop does not end");
        }
        while c.poll_event().is_some() {}
        if feed_data && c.wants_buffer() {
            let size = c.params().buffer_size as usize;
            let _ = c.push_buffer(vec![7; size], false);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn active_sender_survives(inputs in prop::collection::vec((any::<u16>(), hostile()), 0..60)) {
        let c = Connection::connect(config(), Mode::Write, 77, 5000, 7000, Some(1 << 20), vec![], Instant::ZERO).unwrap();
        abuse(c, &inputs, true);
    }

    #[test]
    fn active_receiver_survives(inputs in prop::collection::vec((any::<u16>(), hostile()), 0..60)) {
        let c = Connection::connect(config(), Mode::Read, 77, 5000, 7000, None, vec![], Instant::ZERO).unwrap();
        abuse(c, &inputs, false);
    }

    #[test]
    fn passive_ends_survive(write in any::<bool>(), inputs in prop::collection::vec((any::<u16>(), hostile()), 0..60)) {
        let open = OpenRepr {
            uid: 77, buffer_size: 1000, transfer_size: 0, data_packet_size: 124, burst_size: 4,
            burst_interval_ms: 1, death_timer_s: 3, checksum_data: false,
            mode: if write { WireMode::Write } else { WireMode::Read }, max_outstanding: 3, client: b"",
            rate_feedback: false,
            receiver_offers: false,
            path_probe: false,
            padded_len: 0,
        };
        let c = Connection::accept(config(), &open, 7000, 5000, vec![], Instant::ZERO).unwrap();
        abuse(c, &inputs, !write);
    }
}

/// An opened receiver given packets for buffers it never asked for, packet
/// numbers past a buffer's end and acknowledgments of messages never sent
/// keeps its transfer intact and counts the junk. (A forged packet that is
/// well shaped and in the window is indistinguishable from a real one:
/// NETBLT has no authentication. The tool's end-to-end digest catches it;
/// see docs/decisions.md, "Spoofing".)
#[test]
fn junk_never_reaches_the_application() {
    let data = pair::pattern(30_000, 11);
    let mut p = pair::Pair::write(config(), config(), data.clone(), 11);
    // Let the connection open and start.
    assert!(!p.drive(30));
    let junk = [
        Hostile::Data {
            ldata: false,
            buffer: 2,
            ack: 60_000,
            packet: 65_535,
            last: false,
            len: 100,
        },
        Hostile::Data {
            ldata: true,
            buffer: 4_000_000,
            ack: 1,
            packet: 0,
            last: true,
            len: 1,
        },
        Hostile::Control(vec![(1, 9, 1, vec![])]),
    ];
    let before = p.b.as_ref().map_or(0, |b| b.stats().unexpected);
    if let Some(b) = p.b.as_mut() {
        for h in &junk {
            let bytes = emit(h, b.remote_port(), b.local_port());
            b.handle_datagram(p.now, &bytes);
        }
    }
    assert!(p.drive(2_000_000));
    assert!(p.received == data);
    let after = p.b.as_ref().map_or(0, |b| b.stats().unexpected);
    assert!(after >= before + 2, "junk not counted: {before} -> {after}");
}
