//! Shared helpers for the integration tests: a reference checksum, owned packet specs that
//! proptest can generate, and canonical sample packets.
#![allow(dead_code)]

use netblt_wire::{
    ControlMessage, ControlRepr, DataRepr, FeedbackRepr, Mode, NullAckRepr, OpenRepr, Packet,
    PacketType, Repr,
};
use proptest::prelude::*;

/// The textbook Internet checksum, 16 bits at a time.
pub(crate) fn naive_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in data.chunks(2) {
        let word = (u32::from(pair[0]) << 8) | u32::from(*pair.get(1).unwrap_or(&0));
        sum += word;
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The fixed fields of an OPEN/RESPONSE.
#[derive(Debug, Clone)]
pub(crate) struct OpenFields {
    pub(crate) uid: u32,
    pub(crate) buffer_size: u32,
    pub(crate) transfer_size: u32,
    pub(crate) data_packet_size: u16,
    pub(crate) burst_size: u16,
    pub(crate) burst_interval_ms: u16,
    pub(crate) death_timer_s: u16,
    pub(crate) checksum_data: bool,
    pub(crate) write: bool,
    pub(crate) max_outstanding: u16,
}

/// The fixed fields of a DATA/LDATA.
#[derive(Debug, Clone)]
pub(crate) struct DataFields {
    pub(crate) buffer: u32,
    pub(crate) high_ack: u16,
    pub(crate) packet: u16,
    pub(crate) last_buffer: bool,
    pub(crate) data_checksum: u16,
}

/// An owned description of a packet, from which a borrowing [`Packet`] is built.
#[derive(Debug, Clone)]
pub(crate) enum Spec {
    Open(OpenFields, Vec<u8>),
    Response(OpenFields, Vec<u8>),
    Keepalive,
    Quit(Vec<u8>),
    QuitAck,
    Abort(Vec<u8>),
    Data(DataFields, Vec<u8>),
    LData(DataFields, Vec<u8>),
    NullAck(NullAckRepr),
    Control(Vec<ControlMessage>),
    Refused(Vec<u8>),
    Done,
    Feedback(FeedbackRepr),
}

/// Owned storage that a [`Packet`] can borrow from.
pub(crate) struct Built {
    pub(crate) lp: u16,
    pub(crate) fp: u16,
    pub(crate) spec: Spec,
    /// The encoded control message area, for `Spec::Control`.
    pub(crate) area: Vec<u8>,
}

impl Built {
    pub(crate) fn new(lp: u16, fp: u16, spec: Spec) -> Built {
        let mut area = Vec::new();
        if let Spec::Control(msgs) = &spec {
            for m in msgs {
                let at = area.len();
                area.resize(at + m.buffer_len(), 0);
                m.emit(&mut area[at..]).unwrap();
            }
        }
        Built { lp, fp, spec, area }
    }

    pub(crate) fn packet(&self) -> Packet<'_> {
        let repr = match &self.spec {
            Spec::Open(f, s) => Repr::Open(open(f, s)),
            Spec::Response(f, s) => Repr::Response(open(f, s)),
            Spec::Keepalive => Repr::Keepalive,
            Spec::Quit(s) => Repr::Quit { reason: s },
            Spec::QuitAck => Repr::QuitAck,
            Spec::Abort(s) => Repr::Abort { reason: s },
            Spec::Data(f, d) => Repr::Data(data(f, d)),
            Spec::LData(f, d) => Repr::LData(data(f, d)),
            Spec::NullAck(n) => Repr::NullAck(*n),
            Spec::Control(_) => Repr::Control(ControlRepr::from_message_area(&self.area).unwrap()),
            Spec::Refused(s) => Repr::Refused { reason: s },
            Spec::Done => Repr::Done,
            Spec::Feedback(b) => Repr::Feedback(*b),
        };
        Packet {
            local_port: self.lp,
            foreign_port: self.fp,
            repr,
        }
    }

    /// Emits the packet into a fresh, exactly sized vector.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        let p = self.packet();
        let mut out = vec![0u8; p.buffer_len()];
        let n = p.emit(&mut out).unwrap();
        assert_eq!(n, out.len());
        out
    }
}

fn open<'a>(f: &OpenFields, client: &'a [u8]) -> OpenRepr<'a> {
    OpenRepr {
        uid: f.uid,
        buffer_size: f.buffer_size,
        transfer_size: f.transfer_size,
        data_packet_size: f.data_packet_size,
        burst_size: f.burst_size,
        burst_interval_ms: f.burst_interval_ms,
        death_timer_s: f.death_timer_s,
        checksum_data: f.checksum_data,
        mode: if f.write { Mode::Write } else { Mode::Read },
        rate_feedback: f.transfer_size % 2 == 1,
        receiver_offers: f.transfer_size % 3 == 1,
        path_probe: f.transfer_size % 5 == 1,
        padded_len: 0,
        max_outstanding: f.max_outstanding,
        client,
    }
}

fn data<'a>(f: &DataFields, data: &'a [u8]) -> DataRepr<'a> {
    DataRepr {
        buffer: f.buffer,
        high_ack: f.high_ack,
        packet: f.packet,
        last_buffer: f.last_buffer,
        data_checksum: f.data_checksum,
        data,
    }
}

/// Strings without NUL, as the wire format requires.
pub(crate) fn nul_free(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(1u8..=255, 0..max)
}

pub(crate) fn open_fields() -> impl Strategy<Value = OpenFields> {
    (
        (
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u16>(),
            any::<u16>(),
        ),
        (
            any::<u16>(),
            any::<u16>(),
            any::<bool>(),
            any::<bool>(),
            any::<u16>(),
        ),
    )
        .prop_map(
            |((uid, bs, ts, dps, burst), (rate, death, c, w, maxout))| OpenFields {
                uid,
                buffer_size: bs,
                transfer_size: ts,
                data_packet_size: dps,
                burst_size: burst,
                burst_interval_ms: rate,
                death_timer_s: death,
                checksum_data: c,
                write: w,
                max_outstanding: maxout,
            },
        )
}

pub(crate) fn data_fields() -> impl Strategy<Value = DataFields> {
    (
        any::<u32>(),
        any::<u16>(),
        any::<u16>(),
        any::<bool>(),
        any::<u16>(),
    )
        .prop_map(
            |(buffer, high_ack, packet, last_buffer, data_checksum)| DataFields {
                buffer,
                high_ack,
                packet,
                last_buffer,
                data_checksum,
            },
        )
}

pub(crate) fn control_message() -> impl Strategy<Value = ControlMessage> {
    prop_oneof![
        (any::<u16>(), any::<u32>()).prop_map(|(seq, buffer)| ControlMessage::Go { seq, buffer }),
        (
            any::<u16>(),
            any::<u32>(),
            any::<u16>(),
            any::<u16>(),
            any::<u16>()
        )
            .prop_map(
                |(seq, buffer, burst_size, burst_interval_ms, control_timer_ms)| {
                    ControlMessage::Ok {
                        seq,
                        buffer,
                        burst_size,
                        burst_interval_ms,
                        control_timer_ms,
                    }
                }
            ),
        (
            any::<u16>(),
            any::<u32>(),
            prop::collection::vec(any::<u16>(), 0..40)
        )
            .prop_map(|(seq, buffer, packets)| ControlMessage::Resend {
                seq,
                buffer,
                packets,
            }),
    ]
}

pub(crate) fn spec() -> impl Strategy<Value = Spec> {
    prop_oneof![
        (open_fields(), nul_free(64)).prop_map(|(f, s)| Spec::Open(f, s)),
        (open_fields(), nul_free(64)).prop_map(|(f, s)| Spec::Response(f, s)),
        Just(Spec::Keepalive),
        nul_free(64).prop_map(Spec::Quit),
        Just(Spec::QuitAck),
        nul_free(64).prop_map(Spec::Abort),
        (data_fields(), prop::collection::vec(any::<u8>(), 0..2100))
            .prop_map(|(f, d)| Spec::Data(f, d)),
        (data_fields(), prop::collection::vec(any::<u8>(), 0..2100))
            .prop_map(|(f, d)| Spec::LData(f, d)),
        (any::<u16>(), any::<u16>(), any::<u16>()).prop_map(|(h, b, r)| Spec::NullAck(
            NullAckRepr {
                high_ack: h,
                burst_size: b,
                burst_interval_ms: r,
            }
        )),
        prop::collection::vec(control_message(), 0..12).prop_map(Spec::Control),
        nul_free(64).prop_map(Spec::Refused),
        Just(Spec::Done),
        (
            (any::<u32>(), any::<u16>(), any::<u32>()),
            (any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>())
        )
            .prop_map(|((eb, ep, hold), (ap, ab, lost, seq))| Spec::Feedback(
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

/// One fixed, valid packet of each type (also the fuzz seed corpus).
pub(crate) fn samples() -> Vec<(PacketType, Built)> {
    let open = OpenFields {
        uid: 0x1234_5678,
        buffer_size: 16384,
        transfer_size: 1_000_000,
        data_packet_size: 1438,
        burst_size: 5,
        burst_interval_ms: 100,
        death_timer_s: 60,
        checksum_data: true,
        write: true,
        max_outstanding: 2,
    };
    let data = DataFields {
        buffer: 3,
        high_ack: 2,
        packet: 7,
        last_buffer: true,
        data_checksum: naive_checksum(b"hello"),
    };
    let msgs = vec![
        ControlMessage::Go { seq: 1, buffer: 1 },
        ControlMessage::Ok {
            seq: 2,
            buffer: 1,
            burst_size: 5,
            burst_interval_ms: 100,
            control_timer_ms: 500,
        },
        ControlMessage::Resend {
            seq: 3,
            buffer: 2,
            packets: vec![1, 4, 7],
        },
    ];
    let specs = vec![
        (
            PacketType::Open,
            1000,
            2000,
            Spec::Open(open.clone(), b"ab".to_vec()),
        ),
        (
            PacketType::Response,
            2000,
            1000,
            Spec::Response(open, b"".to_vec()),
        ),
        (PacketType::Keepalive, 1000, 2000, Spec::Keepalive),
        (PacketType::Quit, 1000, 2000, Spec::Quit(b"bye".to_vec())),
        (PacketType::QuitAck, 2000, 1000, Spec::QuitAck),
        (
            PacketType::Abort,
            1000,
            2000,
            Spec::Abort(b"timeout".to_vec()),
        ),
        (
            PacketType::Data,
            1000,
            2000,
            Spec::Data(data.clone(), b"hello".to_vec()),
        ),
        (
            PacketType::LData,
            1000,
            2000,
            Spec::LData(data, b"hello".to_vec()),
        ),
        (
            PacketType::NullAck,
            1000,
            2000,
            Spec::NullAck(NullAckRepr {
                high_ack: 3,
                burst_size: 5,
                burst_interval_ms: 100,
            }),
        ),
        (PacketType::Control, 2000, 1000, Spec::Control(msgs)),
        (
            PacketType::Refused,
            2000,
            1000,
            Spec::Refused(b"busy".to_vec()),
        ),
        (PacketType::Done, 2000, 1000, Spec::Done),
        (
            PacketType::Feedback,
            2000,
            1000,
            Spec::Feedback(FeedbackRepr {
                echo_buffer: 3,
                echo_packet: 7,
                hold_us: 500,
                arrived_packets: 4096,
                arrived_bytes: 5_734_400,
                lost_packets: 9,
                seq: 42,
            }),
        ),
    ];
    specs
        .into_iter()
        .map(|(t, lp, fp, s)| (t, Built::new(lp, fp, s)))
        .collect()
}

/// Recomputes the header checksum of a packet in place (for tests that alter fields).
pub(crate) fn reseal(b: &mut [u8]) {
    let ty = b[3];
    let len = usize::from(u16::from_be_bytes([b[4], b[5]])).min(b.len());
    let end = if ty == 6 || ty == 7 { 24.min(len) } else { len }.max(2);
    let sum = naive_checksum(&b[2..end]);
    b[..2].copy_from_slice(&sum.to_be_bytes());
}
