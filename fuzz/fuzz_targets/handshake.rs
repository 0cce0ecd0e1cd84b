//! Feeds arbitrary bytes to the handshake envelope parser and to both ends of a handshake
//! in every state that reads from the network. Nothing may panic; an envelope that parses
//! must emit back to the same bytes; no junk may finish a handshake.

#![no_main]

use libfuzzer_sys::fuzz_target;
use netblt_crypto::{
    Authorization, Handshake, HandshakeMessage, Identity, InitiatorConfig, OneTimeCode,
    PacketProtection, PeerAuth, ResponderConfig, SeededRandom, Suite, SuiteOffer, Tai64n,
};

fn id(n: u64) -> Identity {
    Identity::generate(&mut SeededRandom::from_u64(n))
}

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = HandshakeMessage::parse(data) {
        let mut out = vec![0u8; m.buffer_len()];
        assert_eq!(m.emit(&mut out), Some(data.len()));
        assert_eq!(out, data);
    }
    let code = OneTimeCode::generate(&mut SeededRandom::from_u64(1));
    let mut pl = [0u8; 2048];

    // The passive end reading an initiation.
    let rcfg = ResponderConfig {
        identity: id(2),
        authorization: Authorization::AcceptAny,
        code: Some(code.clone()),
        accept_keys: true,
        suites: SuiteOffer::for_hardware(true),
    };
    let mut r = Handshake::responder(rcfg, &mut SeededRandom::from_u64(3));
    let _ = r.read_message(data, &mut pl);
    assert!(!r.is_finished());

    // The active end reading a response, in each mode.
    for peer in [
        PeerAuth::Pinned(id(2).public()),
        PeerAuth::FirstContact,
        PeerAuth::Code(code),
    ] {
        let icfg = InitiatorConfig {
            identity: id(1),
            peer,
            suites: SuiteOffer::for_hardware(true),
            timestamp: Tai64n::from_unix(1_800_000_000, 0),
        };
        let mut i = Handshake::initiator(icfg, &mut SeededRandom::from_u64(4)).unwrap();
        let mut buf = [0u8; 2048];
        i.write_message(b"open", &mut buf).unwrap();
        let _ = i.read_message(data, &mut pl);
    }

    // Packet protection opening junk.
    let mut p = PacketProtection::from_secrets(Suite::Aes256Gcm, [1; 32], [2; 32]);
    let mut buf = data.to_vec();
    assert!(p.open_in_place(&mut buf).is_err());
});
