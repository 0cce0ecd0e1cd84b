//! RFC 1106's options in the TCP model's 4.3BSD variant, and the
//! experiment's shape over the `t1-satellite` profile.

use std::time::Duration;

use netblt_sim::profiles::profile;
use netblt_sim::tcp::{big_window, SegKind, TcpConfig, TcpReceiver, TcpSender};
use netblt_sim::tcp_path::{run_tcp_path, TcpPathConfig, TcpPathResult};
use netblt_sim::Instant;

#[test]
fn big_window_splits_into_the_header_field_and_option_c() {
    let w = 156 * 1024;
    let (field, upper) = big_window::split(w);
    assert_eq!(u64::from(field), w & 0xffff);
    assert_eq!(upper, 2);
    assert_eq!(big_window::join(field, upper), w);
    // 30 bits at most.
    assert_eq!(
        big_window::join(big_window::split(u64::MAX).0, big_window::split(u64::MAX).1),
        big_window::MAX
    );
}

#[test]
fn syn_ack_uses_the_small_window_then_option_c_carries_the_rest() {
    let cfg = TcpConfig::bsd43_rfc1106(156 * 1024, false);
    let mut snd = TcpSender::new(cfg, None);
    let mut rcv = TcpReceiver::new(cfg);
    let t = Instant::from_millis(0);
    let syn = snd.poll_transmit(t).unwrap();
    rcv.handle_segment(t, &syn);
    let synack = rcv.poll_transmit(t).unwrap();
    assert_eq!(synack.kind, SegKind::SynAck);
    assert_eq!(synack.window(), 65_535);
    assert!(synack.wnd_upper.is_none());
    snd.handle_segment(t, &synack);
    let data = snd.poll_transmit(t).unwrap();
    assert_eq!(data.kind, SegKind::Data);
    assert!(
        data.wnd_upper.is_some(),
        "every later segment carries option C"
    );
    rcv.handle_segment(t, &data);
    // Every segment is acknowledged at once (RFC 1106 §4.2's slow start
    // opens the window "1 for each acked packet" in R*log2(W)).
    let ack = rcv.poll_transmit(t).unwrap();
    assert_eq!(ack.window(), 156 * 1024);
    assert_eq!(ack.wnd as u16 as u64, (156 * 1024) & 0xffff);
}

#[test]
fn receiver_naks_the_left_edge_hole_once() {
    let cfg = TcpConfig::bsd43_rfc1106(64 * 1024, true);
    let mut snd = TcpSender::new(cfg, None);
    let mut rcv = TcpReceiver::new(cfg);
    let t = Instant::from_millis(0);
    let syn = snd.poll_transmit(t).unwrap();
    rcv.handle_segment(t, &syn);
    let synack = rcv.poll_transmit(t).unwrap();
    snd.handle_segment(t, &synack);
    // Hand-made data segments: 0..512 lost, then 512.. and 1024.. arrive.
    let mut seg = snd.poll_transmit(t).unwrap();
    for start in [512u64, 1024, 1536] {
        seg.seq = start;
        rcv.handle_segment(t, &seg);
        let ack = rcv.poll_transmit(t).unwrap();
        assert_eq!(ack.ack, 0);
        if start == 512 {
            let nak = ack.nak.expect("a gap is NAKed at once");
            assert_eq!((nak.seq, nak.segments), (0, 1));
        } else {
            assert!(ack.nak.is_none(), "the same NAK is not repeated");
        }
    }
    assert_eq!(rcv.stats().naks_sent, 1);
}

fn run(window_k: u64, ber: f64, nak: bool, secs: u64) -> TcpPathResult {
    let p = profile("t1-satellite").unwrap();
    let mut forward = p.forward.clone();
    let mut reverse = p.reverse.clone();
    forward.ber = ber;
    reverse.ber = ber;
    run_tcp_path(&TcpPathConfig {
        forward,
        reverse,
        framing: 8,
        tcp: TcpConfig::bsd43_rfc1106(window_k * 1024, nak),
        duration: Duration::from_secs(secs),
        warmup: Duration::from_secs(20),
        seed: 7,
    })
    .unwrap()
}

#[test]
fn without_errors_the_window_alone_limits_the_rate() {
    let r = run(64, 0.0, false, 60);
    // W / (RTT + a segment time) = 65536 / 0.583 s.
    let bound = 65_536.0 / 0.583;
    assert!(
        (r.steady_rate - bound).abs() / bound < 0.03,
        "{} vs {bound}",
        r.steady_rate
    );
    assert_eq!(r.sender.retransmissions, 0);
    assert_eq!(r.sender.timeouts, 0, "no spurious timeout");
}

#[test]
fn naks_keep_the_window_open_where_tahoe_closes_it() {
    let tahoe = run(64, 1e-6, false, 120);
    let nak = run(64, 1e-6, true, 120);
    assert!(tahoe.sender.fast_recoveries > 0);
    assert_eq!(
        nak.sender.fast_recoveries, 0,
        "no duplicate-ACK rule with NAKs"
    );
    assert!(nak.sender.naks_received > 0);
    assert!(
        nak.rate > 2.0 * tahoe.rate,
        "NAK {} vs Tahoe {}",
        nak.rate,
        tahoe.rate
    );
}

/// Everything the sender sends now.
fn drain(snd: &mut TcpSender, t: Instant) -> Vec<netblt_sim::tcp::Segment> {
    std::iter::from_fn(|| snd.poll_transmit(t)).collect()
}

#[test]
fn a_nak_repaired_hole_releases_the_whole_window_at_once() {
    // RFC 1106 §2.1: the sender "will resend the missing data immediately
    // and then continue sending data where it left off"; §4.2: losses are
    // taken for noise, so the window stays open. When the resent segment
    // fills the hole, the ACK jumps by a window and 4.3BSD's tcp_output
    // sends everything the window allows at once (no pacing) -- and never
    // beyond the ACK plus the window.
    let window = 64 * 1024;
    let segs = window / 512;
    let cfg = TcpConfig::bsd43_rfc1106(window, true);
    let mut snd = TcpSender::new(cfg, None);
    let mut rcv = TcpReceiver::new(cfg);
    let mut ms = 0;
    let mut t = Instant::from_millis(ms);
    let syn = snd.poll_transmit(t).unwrap();
    rcv.handle_segment(t, &syn);
    snd.handle_segment(t, &rcv.poll_transmit(t).unwrap());
    // Slow start without loss until a whole window is out in one round.
    let mut flight = drain(&mut snd, t);
    while flight.len() < segs as usize {
        assert!(ms < 10_000, "no whole window after {ms} ms");
        ms += 100;
        t = Instant::from_millis(ms);
        for seg in &flight {
            rcv.handle_segment(t, seg);
            snd.handle_segment(t, &rcv.poll_transmit(t).unwrap());
        }
        flight = drain(&mut snd, t);
    }
    // The first segment of the window is lost; the rest arrive above it.
    let hole = flight[0].seq;
    ms += 100;
    t = Instant::from_millis(ms);
    let mut resent = Vec::new();
    for seg in &flight[1..] {
        rcv.handle_segment(t, seg);
        snd.handle_segment(t, &rcv.poll_transmit(t).unwrap());
        resent.extend(drain(&mut snd, t));
    }
    assert_eq!(resent.len(), 1, "the NAK resends the hole, nothing else");
    assert_eq!((resent[0].seq, resent[0].retransmission), (hole, true));
    // The resent segment fills the hole: the ACK covers the whole window.
    rcv.handle_segment(t, &resent[0]);
    let ack = rcv.poll_transmit(t).unwrap();
    assert_eq!(ack.ack, hole + window);
    snd.handle_segment(t, &ack);
    let burst = drain(&mut snd, t);
    assert_eq!(burst.len() as u64, segs, "a window's worth at once");
    assert!(burst
        .iter()
        .all(|s| s.seq + u64::from(s.len) <= ack.ack + window));
}
