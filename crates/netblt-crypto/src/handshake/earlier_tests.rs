//! K29: the initiator after a cookie reply, when the passive end also answered a copy of the
//! initiation the cookie reply replaced.

use super::super::tests::{
    check_transport, code_pair, id, initiator, responder, Done, OPEN_BODY, RESPONSE_BODY,
};
use super::super::*;
use crate::dos::cookie::COOKIE_LEN;
use crate::rng::SeededRandom;

/// The timestamp the initiation with the cookie carries.
fn later() -> Tai64n {
    Tai64n::from_unix(1_800_000_100, 0)
}

/// An initiator whose first initiation was read and answered by `r1` and, in another copy,
/// drew a cookie reply: returns the initiator (restarted with the cookie), the answer to the
/// first initiation and the initiation with the cookie.
fn straddled(icfg: InitiatorConfig, r1: &mut Handshake) -> (Handshake, Vec<u8>, Vec<u8>) {
    let mut i = Handshake::initiator(icfg, &mut SeededRandom::from_u64(40)).unwrap();
    let (mut buf, mut pl) = ([0u8; 1500], [0u8; 1500]);
    let n = i.write_message(OPEN_BODY, &mut buf).unwrap();
    let first = buf[..n].to_vec();
    assert!(r1.read_message(&first, &mut pl).is_ok());
    let k = r1.write_message(RESPONSE_BODY, &mut buf).unwrap();
    let answer = buf[..k].to_vec();
    let k = write_cookie_reply(&[7u8; COOKIE_LEN], &mut buf).unwrap();
    assert_eq!(
        i.read_message(&buf[..k], &mut pl),
        Ok(Progress::RetryWithCookie)
    );
    i.set_timestamp(later()).unwrap();
    let n = i.write_message(OPEN_BODY, &mut buf).unwrap();
    assert_ne!(&buf[..n], &first[..], "fresh ephemeral key");
    (i, answer, buf[..n].to_vec())
}

/// Key mode: the answer to the replaced initiation (and its copies) is dropped, the answer to
/// the initiation with the cookie completes the handshake.
fn key_mode(peer: PeerAuth) {
    let rcfg = responder(2, &[1]);
    let mut r1 = Handshake::responder(rcfg.clone(), &mut SeededRandom::from_u64(41));
    let (mut i, answer, second) = straddled(initiator(1, peer), &mut r1);
    let (mut buf, mut pl) = ([0u8; 1500], [0u8; 1500]);
    for _ in 0..3 {
        assert_eq!(
            i.read_message(&answer, &mut pl),
            Err(HandshakeError::Superseded)
        );
    }
    assert!(!i.is_finished() && !i.is_my_turn());
    // The passive end replaced its handshake with one for the initiation with the cookie.
    let mut r2 = Handshake::responder(rcfg, &mut SeededRandom::from_u64(42));
    assert!(r2.read_message(&second, &mut pl).is_ok());
    if r2.pattern() == Some(Pattern::Ik) {
        assert_eq!(r2.initiation_timestamp(), Some(later()));
    }
    let k = r2.write_message(RESPONSE_BODY, &mut buf).unwrap();
    assert_eq!(
        i.read_message(&buf[..k], &mut pl),
        Ok(Progress::Payload(RESPONSE_BODY.len()))
    );
    if i.is_my_turn() {
        let n = i.write_message(&[], &mut buf).unwrap();
        assert!(r2.read_message(&buf[..n], &mut pl).is_ok());
    }
    assert!(i.is_finished() && r2.is_finished());
    check_transport(&mut Done {
        i: i.into_transport().unwrap(),
        r: r2.into_transport().unwrap(),
        sizes: Vec::new(),
    });
}

#[test]
fn ik_drops_the_answer_to_the_initiation_a_cookie_replaced() {
    key_mode(PeerAuth::Pinned(id(2).public()));
}

#[test]
fn xx_drops_the_answer_to_the_initiation_a_cookie_replaced() {
    key_mode(PeerAuth::FirstContact);
}

/// A response that fails against the state of both initiations is the end, as before K29;
/// and one the earlier state does not authenticate spends it (it is tried once).
#[test]
fn a_response_to_neither_initiation_is_the_end() {
    let rcfg = responder(2, &[1]);
    let mut r1 = Handshake::responder(rcfg.clone(), &mut SeededRandom::from_u64(41));
    let (mut i, answer, _) = straddled(initiator(1, PeerAuth::Pinned(id(2).public())), &mut r1);
    // An answer to someone else's initiation (another ephemeral key).
    let mut other = Handshake::initiator(
        initiator(1, PeerAuth::Pinned(id(2).public())),
        &mut SeededRandom::from_u64(99),
    )
    .unwrap();
    let (mut buf, mut pl) = ([0u8; 1500], [0u8; 1500]);
    let n = other.write_message(OPEN_BODY, &mut buf).unwrap();
    let mut r3 = Handshake::responder(rcfg, &mut SeededRandom::from_u64(43));
    assert!(r3.read_message(&buf[..n], &mut pl).is_ok());
    let k = r3.write_message(RESPONSE_BODY, &mut buf).unwrap();
    assert_eq!(
        i.read_message(&buf[..k], &mut pl),
        Err(HandshakeError::Decrypt)
    );
    // The earlier state was tried and is gone: the real answer to the first initiation is
    // now just as foreign.
    assert_eq!(
        i.read_message(&answer, &mut pl),
        Err(HandshakeError::Decrypt)
    );
}

/// A message that is no response (here a response envelope with a SPAKE2 part in key mode)
/// tries nothing, so it does not spend the earlier state.
#[test]
fn a_malformed_response_leaves_the_earlier_state() {
    let mut r1 = Handshake::responder(responder(2, &[1]), &mut SeededRandom::from_u64(41));
    let (mut i, answer, _) = straddled(initiator(1, PeerAuth::Pinned(id(2).public())), &mut r1);
    let mut buf = [0u8; 200];
    let junk = HandshakeMessage {
        kind: Kind::Response,
        pattern: None,
        suites: 0,
        cookie: None,
        pake: Some(&[1u8; message::PAKE_LEN]),
        noise: &[2u8; 64],
    };
    let n = junk.emit(&mut buf).unwrap();
    let mut pl = [0u8; 1500];
    assert_eq!(
        i.read_message(&buf[..n], &mut pl),
        Err(HandshakeError::Unexpected)
    );
    assert_eq!(
        i.read_message(&answer, &mut pl),
        Err(HandshakeError::Superseded)
    );
}

/// Code mode: the passive end never replaces a pending code handshake (each is a guess of the
/// code), so the initiator takes up the one whose response came, and completes it.
#[test]
fn code_mode_completes_the_handshake_whose_response_came() {
    let (icfg, rcfg) = code_pair(50, 50);
    let mut r1 = Handshake::responder(rcfg, &mut SeededRandom::from_u64(41));
    let (mut i, answer, _) = straddled(icfg, &mut r1);
    let (mut buf, mut pl) = ([0u8; 1500], [0u8; 1500]);
    assert_eq!(
        i.read_message(&answer, &mut pl),
        Ok(Progress::Payload(RESPONSE_BODY.len()))
    );
    let n = i.write_message(&[], &mut buf).unwrap();
    assert!(r1.read_message(&buf[..n], &mut pl).is_ok());
    check_transport(&mut Done {
        i: i.into_transport().unwrap(),
        r: r1.into_transport().unwrap(),
        sizes: Vec::new(),
    });
}

/// Code mode, no race: the response to the initiation with the cookie fails against the
/// earlier state (tried first, whose SPAKE2 state it spends) and is read by the current one.
#[test]
fn code_mode_reads_the_answer_to_the_initiation_with_the_cookie() {
    let (icfg, rcfg) = code_pair(50, 50);
    let mut r1 = Handshake::responder(rcfg.clone(), &mut SeededRandom::from_u64(41));
    let (mut i, _, second) = straddled(icfg, &mut r1);
    let (mut buf, mut pl) = ([0u8; 1500], [0u8; 1500]);
    let mut r2 = Handshake::responder(rcfg, &mut SeededRandom::from_u64(42));
    assert!(r2.read_message(&second, &mut pl).is_ok());
    let k = r2.write_message(RESPONSE_BODY, &mut buf).unwrap();
    assert_eq!(
        i.read_message(&buf[..k], &mut pl),
        Ok(Progress::Payload(RESPONSE_BODY.len()))
    );
    let n = i.write_message(&[], &mut buf).unwrap();
    assert!(r2.read_message(&buf[..n], &mut pl).is_ok());
    assert!(i.is_finished() && r2.is_finished());
}

/// The timestamp is set only between a cookie reply and the initiation it asks for (or
/// before the first), and only by an initiator.
#[test]
fn set_timestamp_only_before_an_initiation_is_written() {
    let mut i = Handshake::initiator(
        initiator(1, PeerAuth::Pinned(id(2).public())),
        &mut SeededRandom::from_u64(1),
    )
    .unwrap();
    assert_eq!(i.set_timestamp(later()), Ok(()));
    let mut buf = [0u8; 1500];
    i.write_message(OPEN_BODY, &mut buf).unwrap();
    assert_eq!(i.set_timestamp(later()), Err(HandshakeError::State));
    let mut r = Handshake::responder(responder(2, &[1]), &mut SeededRandom::from_u64(2));
    assert_eq!(r.set_timestamp(later()), Err(HandshakeError::State));
}
