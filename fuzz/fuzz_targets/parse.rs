//! Feeds arbitrary bytes to `Packet::parse`. Parsing must never panic, and anything that parses
//! must emit into exactly `buffer_len()` bytes, parse back to the same packet, and re-emit to the
//! same bytes (the canonical form is a fixed point).
//!
//! Under `cfg(fuzzing)` the parser skips the header checksum check, so random inputs reach the
//! body parsers.

#![no_main]

use libfuzzer_sys::fuzz_target;
use netblt_wire::Packet;

fuzz_target!(|data: &[u8]| {
    let Ok(packet) = Packet::parse(data) else {
        return;
    };
    let _ = packet.to_string();

    let len = packet.buffer_len();
    assert!(len <= data.len(), "canonical form longer than the input");
    let mut buf = vec![0u8; len];
    let n = packet.emit(&mut buf).expect("a parsed packet must emit");
    assert_eq!(n, len);

    let again = Packet::parse(&buf).expect("an emitted packet must parse");
    assert_eq!(again, packet);

    let mut buf2 = vec![0u8; again.buffer_len()];
    assert_eq!(again.emit(&mut buf2), Ok(len));
    assert_eq!(buf, buf2);
});
