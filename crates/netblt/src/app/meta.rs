//! Application metadata carried in the OPEN and RESPONSE client strings.
//!
//! RFC 998 leaves the client string to the client ("a client-specific
//! string"); ours is compact JSON, which never contains a NUL byte (serde
//! escapes control characters), so it survives the NUL-terminated field:
//!
//! * OPEN, WRITE: `{"v":1,"op":"put","name":"rel/path","size":N}`
//! * OPEN, READ: `{"v":1,"op":"get","name":"rel/path"}`
//! * OPEN, WRITE, benchmark: `{"v":1,"op":"sink","size":N}`
//! * RESPONSE: `{"v":1}`, or `{"v":1,"size":N}` answering a `get`.
//!
//! `size` counts the file's bytes; the transfer carries `size + 32` bytes,
//! the BLAKE3 digest following the data (see [`crate::app`]).

use serde::{Deserialize, Serialize};

/// Metadata version.
pub(crate) const VERSION: u32 = 1;
/// Longest name we send or accept, in bytes.
pub(crate) const MAX_NAME: usize = 4096;

/// What the active end asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    /// Store a file of `size` bytes under `name` (WRITE mode).
    Put { name: String, size: u64 },
    /// Send us the file `name` (READ mode).
    Get { name: String },
    /// Discard `size` bytes (WRITE mode, RFC 1030's memory-to-memory test).
    Sink { size: u64 },
}

#[derive(Serialize, Deserialize)]
struct Wire {
    v: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    op: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
}

fn to_bytes(w: &Wire) -> Vec<u8> {
    serde_json::to_vec(w).unwrap_or_default()
}

impl Request {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let (op, name, size) = match self {
            Request::Put { name, size } => ("put", Some(name.clone()), Some(*size)),
            Request::Get { name } => ("get", Some(name.clone()), None),
            Request::Sink { size } => ("sink", None, Some(*size)),
        };
        to_bytes(&Wire {
            v: VERSION,
            op: Some(op.into()),
            name,
            size,
        })
    }

    /// Parses an OPEN client string; the error is a REFUSED reason.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Request, String> {
        let w: Wire = serde_json::from_slice(bytes)
            .map_err(|_| "unreadable request (not a netblt client?)".to_string())?;
        if w.v != VERSION {
            return Err(format!("unsupported request version {}", w.v));
        }
        let name = |n: Option<String>| -> Result<String, String> {
            let n = n.ok_or_else(|| "request without a name".to_string())?;
            if n.len() > MAX_NAME {
                return Err("name not allowed (too long)".into());
            }
            Ok(n)
        };
        let size = |s: Option<u64>| s.ok_or_else(|| "request without a size".to_string());
        match w.op.as_deref() {
            Some("put") => Ok(Request::Put {
                name: name(w.name)?,
                size: size(w.size)?,
            }),
            Some("get") => Ok(Request::Get {
                name: name(w.name)?,
            }),
            Some("sink") => Ok(Request::Sink {
                size: size(w.size)?,
            }),
            Some(other) => Err(format!("unknown operation '{other}'")),
            None => Err("request without an operation".into()),
        }
    }
}

/// RESPONSE client string.
pub(crate) fn encode_response(size: Option<u64>) -> Vec<u8> {
    to_bytes(&Wire {
        v: VERSION,
        op: None,
        name: None,
        size,
    })
}

/// The size in a RESPONSE to a `get`.
pub(crate) fn decode_response_size(bytes: &[u8]) -> Option<u64> {
    serde_json::from_slice::<Wire>(bytes).ok()?.size
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_no_nul() {
        for r in [
            Request::Put {
                name: "a/b\u{0}c".into(),
                size: 7,
            },
            Request::Get { name: "x".into() },
            Request::Sink { size: 1 << 40 },
        ] {
            let b = r.encode();
            assert!(!b.contains(&0));
            assert_eq!(Request::decode(&b), Ok(r));
        }
        assert_eq!(
            std::str::from_utf8(&Request::Sink { size: 5 }.encode()).ok(),
            Some(r#"{"v":1,"op":"sink","size":5}"#)
        );
        assert!(Request::decode(b"junk").is_err());
        assert!(Request::decode(br#"{"v":1,"op":"put","name":"x"}"#).is_err());
        assert_eq!(decode_response_size(&encode_response(Some(9))), Some(9));
    }
}
