//! A receiver that hands the data to a callback instead of a file: here it
//! counts bytes and keeps a running checksum of each transfer, then prints
//! one line per transfer when the digest has been verified.
//!
//! ```sh
//! cargo run -p netblt --example callback_receiver -- 127.0.0.1:9998 &
//! netblt send some.file 127.0.0.1:9998
//! ```
//!
//! Encrypted as the tool is by default (the library's default is plain
//! RFC 998, decision K14), accepting any sender's key as `netblt recv
//! --accept-any` does: an example on loopback, not a server to expose.
//!
//! Arguments: [LISTEN address, default 127.0.0.1:9998] [transfers to take
//! before exiting, default: no limit].

use std::collections::HashMap;
use std::process::ExitCode;

use netblt::{DataHandler, IncomingTransfer, Receiver, ReceiverOptions};

/// Per-transfer byte count and a simple (non-cryptographic) checksum.
#[derive(Default)]
struct Counter {
    seen: HashMap<(String, std::net::SocketAddr), (u64, u32)>,
}

impl DataHandler for Counter {
    fn accept(&mut self, t: &IncomingTransfer) -> Result<(), String> {
        if t.size > 1 << 30 {
            return Err("this example takes at most 1 GiB".into());
        }
        self.seen.insert((t.name.clone(), t.peer), (0, 0));
        Ok(())
    }

    fn data(&mut self, t: &IncomingTransfer, offset: u64, bytes: &[u8]) -> Result<(), String> {
        let e = self.seen.entry((t.name.clone(), t.peer)).or_default();
        assert_eq!(offset, e.0, "data arrive in order");
        e.0 += bytes.len() as u64;
        e.1 = bytes
            .iter()
            .fold(e.1, |s, &b| s.rotate_left(5) ^ u32::from(b));
        Ok(())
    }

    fn end(&mut self, t: &IncomingTransfer, verified: bool) {
        let (n, sum) = self
            .seen
            .remove(&(t.name.clone(), t.peer))
            .unwrap_or_default();
        println!(
            "{} from {}: {n} bytes, checksum {sum:08x}, {}",
            t.name,
            t.peer,
            if verified { "verified" } else { "NOT verified" }
        );
    }
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let listen = args.next().unwrap_or_else(|| "127.0.0.1:9998".into());
    let Ok(listen) = listen.parse() else {
        eprintln!("'{listen}' is not an address such as 127.0.0.1:9998");
        return ExitCode::from(2);
    };
    let mut opts = ReceiverOptions::new();
    opts.max_transfers = args.next().and_then(|n| n.parse().ok());
    let mut encryption = netblt::Encryption::default();
    encryption.accept_any = true;
    opts.security = netblt::Security::Encrypted(encryption);
    let receiver = match Receiver::bind(listen, opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("callback_receiver: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("listening on {}", receiver.local_addr());
    match receiver.handle_with(Counter::default()) {
        Ok(s) => {
            eprintln!("{} transfers, {} failed", s.transfers, s.failed);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("callback_receiver: {e}");
            ExitCode::FAILURE
        }
    }
}
