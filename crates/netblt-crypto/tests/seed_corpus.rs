//! Keeps the handshake fuzz seeds (`fuzz/corpus/handshake/seed-*`) in step with the encoder:
//! one valid message of each kind and mode, made with fixed seeds. The test fails if a seed is
//! missing or stale; run it with `NETBLT_WRITE_SEEDS=1` to (re)write them.

use std::path::PathBuf;

use netblt_crypto::handshake::{write_cookie_reply, write_key_mismatch};
use netblt_crypto::{
    Authorization, Handshake, HandshakeMessage, Identity, InitiatorConfig, OneTimeCode, PeerAuth,
    ResponderConfig, SeededRandom, SuiteOffer, Tai64n,
};

fn id(n: u64) -> Identity {
    Identity::generate(&mut SeededRandom::from_u64(n))
}

/// The messages of one whole handshake: initiation, response and (XX) finish.
fn conversation(peer: PeerAuth) -> Vec<Vec<u8>> {
    let code = match &peer {
        PeerAuth::Code(c) => Some(c.clone()),
        _ => None,
    };
    let icfg = InitiatorConfig {
        identity: id(1),
        peer,
        suites: SuiteOffer::for_hardware(true),
        timestamp: Tai64n::from_unix(1_800_000_000, 0),
    };
    let rcfg = ResponderConfig {
        identity: id(2),
        authorization: Authorization::AcceptAny,
        code,
        accept_keys: true,
        suites: SuiteOffer::for_hardware(true),
    };
    let mut i = Handshake::initiator(icfg, &mut SeededRandom::from_u64(10)).unwrap();
    let mut r = Handshake::responder(rcfg, &mut SeededRandom::from_u64(11));
    let (mut buf, mut pl) = ([0u8; 1500], [0u8; 1500]);
    let mut out = Vec::new();
    let n = i.write_message(&[0x11; 40], &mut buf).unwrap();
    out.push(buf[..n].to_vec());
    r.read_message(&buf[..n], &mut pl).unwrap();
    // Format 2: only IK's response carries the RESPONSE body; XX sends it sealed after
    // FINISH (decision K20).
    let body: &[u8] = if i.pattern() == Some(netblt_crypto::Pattern::Ik) {
        &[0x22; 28]
    } else {
        &[]
    };
    let n = r.write_message(body, &mut buf).unwrap();
    out.push(buf[..n].to_vec());
    i.read_message(&buf[..n], &mut pl).unwrap();
    if !i.is_finished() {
        let n = i.write_message(&[], &mut buf).unwrap();
        out.push(buf[..n].to_vec());
        r.read_message(&buf[..n], &mut pl).unwrap();
    }
    assert!(r.is_finished());
    out
}

fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut seeds = Vec::new();
    let code = OneTimeCode::generate(&mut SeededRandom::from_u64(5));
    for (mode, peer) in [
        ("ik", PeerAuth::Pinned(id(2).public())),
        ("xx", PeerAuth::FirstContact),
        ("code", PeerAuth::Code(code)),
    ] {
        for (msg, name) in conversation(peer)
            .into_iter()
            .zip(["init", "response", "finish"])
        {
            seeds.push((format!("seed-{mode}-{name}"), msg));
        }
    }
    let mut buf = [0u8; 100];
    let n = write_cookie_reply(&[0x33; 20], &mut buf).unwrap();
    seeds.push(("seed-cookie-reply".into(), buf[..n].to_vec()));
    let n = write_key_mismatch(&id(3), &mut buf).unwrap();
    seeds.push(("seed-key-mismatch".into(), buf[..n].to_vec()));
    seeds
}

#[test]
fn seed_corpus_matches_encoder() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/handshake");
    let write = std::env::var_os("NETBLT_WRITE_SEEDS").is_some();
    if write {
        std::fs::create_dir_all(&dir).unwrap();
    }
    for (name, bytes) in seeds() {
        assert!(HandshakeMessage::parse(&bytes).is_ok(), "{name}");
        let path = dir.join(&name);
        if write {
            std::fs::write(&path, &bytes).unwrap();
        }
        let on_disk = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run with NETBLT_WRITE_SEEDS=1 to create)",
                path.display()
            )
        });
        assert_eq!(on_disk, bytes, "{} is stale", path.display());
    }
}
