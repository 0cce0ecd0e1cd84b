//! Application metadata carried in the OPEN and RESPONSE client strings.
//!
//! RFC 998 leaves the client string to the client ("a client-specific
//! string"); ours is compact JSON, which never contains a NUL byte (serde
//! escapes control characters), so it survives the NUL-terminated field.
//! No new packet type is needed for any of it:
//!
//! * OPEN, WRITE: `{"v":1,"op":"put","name":"rel/path","size":N,"mtime":NS,"mode":M}`;
//!   no `size` for a stream of unknown length (`netblt send -`); with
//!   `"resume":true` the sender asks what the receiver already has.
//! * OPEN, READ: `{"v":1,"op":"get","name":"rel/path","bundle":true}`,
//!   with `--resume` also `"have":{"size":N,"mtime":NS,"from":K,"prefix":"hex"}`:
//!   this end holds the first K bytes of a file that had that size and
//!   mtime. `"bundle":true`: a directory may come as a bundle (decision
//!   M15); a client without it (older than that) is refused a directory
//!   with a reason that says so, rather than sent a tar stream it would
//!   store as the file's bytes. `"skip":"hex"` (16 bytes): the token of a
//!   `have` list this client uploaded just before; the server leaves out
//!   of the directory's bundle the files listed there (decision M17).
//! * OPEN, WRITE, what a `get` client has: `{"v":1,"op":"have","token":"hex","key":"hex"}`:
//!   the data are 16-byte keyed digests of (name, size, mtime) of the
//!   files below the destination, named as the server's bundle names them
//!   ([`crate::app::have`]); the server keeps them a minute under the
//!   token for the `get` that follows (decision M17). A server older than
//!   that refuses the operation. `"content":true` (`--checksum`, decision
//!   M18): the digests are of (name, size, BLAKE3 of the contents), and
//!   the server compares its files' contents; a server older than that
//!   ignores the field and compares times, which match no content digest:
//!   it sends everything.
//! * OPEN, WRITE, benchmark: `{"v":1,"op":"sink","size":N}`; in an
//!   encrypted session `"digest":false` may follow: the transfer then
//!   carries exactly `size` bytes, no digest (decision K16)
//! * OPEN, WRITE, many files: `{"v":1,"op":"bundle","name":"label"}`: the
//!   data are a tar stream of unknown length ([`super::bundle`]) that the
//!   receiver unpacks into its directory; `name` only labels reports. A
//!   receiver older than bundles refuses the unknown operation.
//! * OPEN, READ, what is already there: `{"v":1,"op":"same","names":[..],"key":"hex"}`:
//!   the receiver sends a 16-byte keyed BLAKE3 digest of (name, size,
//!   mtime) for every regular file it holds at or below those names
//!   ([`crate::app::same`]), so that a bundle can leave out the files it
//!   has (decision M14). A receiver older than that refuses the operation.
//!   `"content":true` (`--checksum`, decision M18): digests of (name, size,
//!   BLAKE3 of the contents) instead; a receiver older than that ignores
//!   the field and answers with times, which match no content digest: the
//!   bundle goes whole.
//! * RESPONSE: `{"v":1}`; answering a `get`, the file's `size`, `mtime` and
//!   `mode`, or for a directory `"bundle":true` (the data are its bundle, a
//!   stream of unknown length) and, when the server's walk finished before
//!   it answered, `"total":N`, the stream's expected length (progress only);
//!   accepting a resume, `"from":K,"prefix":"hex"` (put: what the
//!   receiver has; get: the offer accepted); `note` says why a partial copy
//!   was discarded.
//!
//! `size` counts the file's bytes; the transfer carries `size + 32` bytes,
//! the BLAKE3 digest following the data (see [`crate::app`]). A resumed
//! transfer (`from` > 0 agreed) carries an 8-byte big-endian offset first:
//! the sender's choice, K (its prefix matched) or 0 (it did not: the whole
//! file follows). Unknown fields are ignored, so older peers simply do not
//! resume.

use serde::{Deserialize, Serialize};

use super::have::{Token, TOKEN};
use super::same::Quick;

/// Metadata version.
pub(crate) const VERSION: u32 = 1;
/// Longest name we send or accept, in bytes.
pub(crate) const MAX_NAME: usize = 4096;
/// The refusal of a resumed put whose file is already at the receiver,
/// complete: same size and modification time (rsync's and ascp's quick
/// check; decision M13). The sender reads it as "nothing to send".
pub(crate) const ALREADY_THERE: &str =
    "already there: same size and modification time (nothing to resume)";

/// The refusal of a `same` request by a receiver that stores no files
/// (`--sink`, `--stdout`): the sender then sends the bundle whole.
pub(crate) const NOTHING_TO_COMPARE: &str =
    "nothing to compare with: this receiver stores no files";

/// Bytes of the offset that starts a resumed transfer.
pub(crate) const OFFSET_LEN: usize = 8;

/// The refusal of a `get --resume` whose client holds a complete copy that
/// is not the server's file (another size or modification time): as `send
/// --resume` to a receiver holding a different file, replacing it is
/// `overwrite`'s to do (decision F12). Read as
/// [`PeerReason::FileExists`](crate::PeerReason::FileExists).
pub(crate) const DIFFERS_THERE: &str =
    "the complete copy at the client differs from the server's file (size or modification \
     time)";
/// The same before F25, naming the tool's flag.
pub(crate) const DIFFERS_THERE_OLD: &str =
    "the complete copy at the client differs from the server's file (size or modification \
     time): use --force to replace it";

/// A partial copy: the first `from` bytes of a file that had `size` bytes
/// and modification time `mtime`, whose 1 MiB units hash to `prefix`
/// (`tree::prefix_hash`, hex). With `from == size` and no prefix, the whole
/// file, complete ([`Have::complete`]: `get --resume` of a file that had
/// arrived, decision F12).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Have {
    pub(crate) size: u64,
    pub(crate) mtime: i64,
    pub(crate) from: u64,
    pub(crate) prefix: String,
}

impl Have {
    /// A complete copy of `size` bytes modified at `mtime`.
    pub(crate) fn complete(size: u64, mtime: i64) -> Have {
        Have {
            size,
            mtime,
            from: size,
            prefix: String::new(),
        }
    }

    /// Whether this is [`Have::complete`]'s claim.
    pub(crate) fn is_complete(&self) -> bool {
        self.from == self.size && self.prefix.is_empty()
    }
}

/// What the active end asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    /// Store a file under `name` (WRITE mode): `size` bytes, or a stream
    /// (`None`) ending with the last buffer.
    Put {
        name: String,
        size: Option<u64>,
        mtime: Option<i64>,
        mode: Option<u32>,
        resume: bool,
    },
    /// Send us the file `name` (READ mode); `have`: we hold part of it;
    /// `bundle`: a directory may come as a bundle (M15).
    Get {
        name: String,
        have: Option<Have>,
        bundle: bool,
        /// The token of the client's `have` list (M17).
        skip: Option<Token>,
    },
    /// Discard `size` bytes (WRITE mode, RFC 1030's memory-to-memory test);
    /// `digest: false`: no end-to-end digest follows the data (only asked
    /// for, and only honoured, in an encrypted session, decision K16).
    Sink { size: u64, digest: bool },
    /// Unpack the tar stream that follows into the receiver's directory
    /// (WRITE mode, a stream); `name` labels it in reports.
    Bundle { name: String },
    /// Send us the digests of the regular files at or below `names`
    /// (READ mode), keyed with `key`, of what `quick` says
    /// ([`crate::app::same`]).
    Same {
        names: Vec<String>,
        key: [u8; 32],
        quick: Quick,
    },
    /// Keep the digests that follow (WRITE mode, a `get` client's files,
    /// keyed with `key`, of what `quick` says) under `token`, for the
    /// `get` that names it (M17).
    Have {
        token: Token,
        key: [u8; 32],
        quick: Quick,
    },
}

/// At most this many names in one `same` request (the OPEN's client string
/// must fit one packet anyway).
pub(crate) const MAX_SAME_NAMES: usize = 64;

/// The passive end's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Response {
    /// `get`: the file's size, mtime and permission bits.
    pub(crate) size: Option<u64>,
    pub(crate) mtime: Option<i64>,
    pub(crate) mode: Option<u32>,
    /// Resume agreed from this offset (put: the receiver's partial copy;
    /// get: the client's offer, accepted), with the prefix's hash.
    pub(crate) from: Option<u64>,
    pub(crate) prefix: Option<String>,
    /// Why a partial copy was not used.
    pub(crate) note: Option<String>,
    /// `get` of a directory: the data are its bundle (M15), of about
    /// `total` bytes when the server knew that before answering.
    pub(crate) bundle: bool,
    pub(crate) total: Option<u64>,
    /// `same`: how many more transfers the receiver takes before it stops
    /// (`recv --once`: 1), when it has a limit (F24).
    pub(crate) takes: Option<u64>,
}

#[derive(Serialize, Deserialize, Default)]
struct Wire {
    v: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    op: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mtime: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mode: Option<u32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    resume: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    have: Option<Have>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    digest: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    names: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    bundle: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    total: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    takes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    skip: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    content: bool,
}

/// A request's hex field of `N` bytes; the error (a REFUSED reason) names
/// it: missing or malformed.
fn hex_field<const N: usize>(v: Option<String>, what: &str) -> Result<[u8; N], String> {
    v.as_deref()
        .and_then(super::parse_hex)
        .ok_or_else(|| format!("request without a {what}"))
}

fn to_bytes(w: &Wire) -> Vec<u8> {
    serde_json::to_vec(w).unwrap_or_default()
}

impl Request {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Wire {
            v: VERSION,
            ..Wire::default()
        };
        match self {
            Request::Put {
                name,
                size,
                mtime,
                mode,
                resume,
            } => {
                w.op = Some("put".into());
                w.name = Some(name.clone());
                w.size = *size;
                w.mtime = *mtime;
                w.mode = *mode;
                w.resume = *resume;
            }
            Request::Get {
                name,
                have,
                bundle,
                skip,
            } => {
                w.op = Some("get".into());
                w.name = Some(name.clone());
                w.have = have.clone();
                w.bundle = *bundle;
                w.skip = skip.as_ref().map(|t| super::hex(t));
            }
            Request::Sink { size, digest } => {
                w.op = Some("sink".into());
                w.size = Some(*size);
                w.digest = (!digest).then_some(false);
            }
            Request::Bundle { name } => {
                w.op = Some("bundle".into());
                w.name = Some(name.clone());
            }
            Request::Same { names, key, quick } => {
                w.op = Some("same".into());
                w.names = Some(names.clone());
                w.key = Some(super::hex(key));
                w.content = *quick == Quick::Content;
            }
            Request::Have { token, key, quick } => {
                w.op = Some("have".into());
                w.token = Some(super::hex(token));
                w.key = Some(super::hex(key));
                w.content = *quick == Quick::Content;
            }
        }
        to_bytes(&w)
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
        match w.op.as_deref() {
            Some("put") => Ok(Request::Put {
                name: name(w.name)?,
                size: w.size,
                mtime: w.mtime,
                mode: w.mode,
                resume: w.resume,
            }),
            Some("get") => Ok(Request::Get {
                name: name(w.name)?,
                have: w.have,
                bundle: w.bundle,
                skip: w
                    .skip
                    .map(|t| hex_field::<TOKEN>(Some(t), "well-formed skip token"))
                    .transpose()?,
            }),
            Some("sink") => Ok(Request::Sink {
                size: w.size.ok_or_else(|| "request without a size".to_string())?,
                digest: w.digest.unwrap_or(true),
            }),
            Some("bundle") => Ok(Request::Bundle {
                name: name(w.name)?,
            }),
            Some("same") => {
                let names = w.names.unwrap_or_default();
                if names.is_empty() || names.len() > MAX_SAME_NAMES {
                    return Err("request with no names or too many".into());
                }
                let names = names
                    .into_iter()
                    .map(|n| name(Some(n)))
                    .collect::<Result<_, _>>()?;
                let key = hex_field(w.key, "key")?;
                Ok(Request::Same {
                    names,
                    key,
                    quick: Quick::from_content(w.content),
                })
            }
            Some("have") => Ok(Request::Have {
                token: hex_field(w.token, "token")?,
                key: hex_field(w.key, "key")?,
                quick: Quick::from_content(w.content),
            }),
            Some(other) => Err(format!("unknown operation '{other}'")),
            None => Err("request without an operation".into()),
        }
    }
}

impl Response {
    pub(crate) fn encode(&self) -> Vec<u8> {
        to_bytes(&Wire {
            v: VERSION,
            size: self.size,
            mtime: self.mtime,
            mode: self.mode,
            from: self.from,
            prefix: self.prefix.clone(),
            note: self.note.clone(),
            bundle: self.bundle,
            total: self.total,
            takes: self.takes,
            ..Wire::default()
        })
    }

    /// Reads a RESPONSE client string (anything unreadable: nothing).
    pub(crate) fn decode(bytes: &[u8]) -> Response {
        let Ok(w) = serde_json::from_slice::<Wire>(bytes) else {
            return Response::default();
        };
        Response {
            size: w.size,
            mtime: w.mtime,
            mode: w.mode,
            from: w.from.filter(|&f| f > 0),
            prefix: w.prefix,
            note: w.note,
            bundle: w.bundle,
            total: w.total,
            takes: w.takes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_no_nul() {
        for r in [
            Request::Same {
                names: vec!["photos".into(), "a b".into()],
                key: [9; 32],
                quick: Quick::Content,
            },
            Request::Put {
                name: "a/b\u{0}c".into(),
                size: Some(7),
                mtime: Some(-3),
                mode: Some(0o644),
                resume: true,
            },
            Request::Put {
                name: "stream".into(),
                size: None,
                mtime: None,
                mode: None,
                resume: false,
            },
            Request::Get {
                name: "x".into(),
                have: Some(Have {
                    size: 9,
                    mtime: 1,
                    from: 4,
                    prefix: "ab".into(),
                }),
                bundle: false,
                skip: None,
            },
            Request::Get {
                name: "x".into(),
                have: None,
                bundle: true,
                skip: Some([3; TOKEN]),
            },
            Request::Have {
                token: [0xab; TOKEN],
                key: [4; 32],
                quick: Quick::Times,
            },
            Request::Sink {
                size: 1 << 40,
                digest: false,
            },
            Request::Bundle {
                name: "tree".into(),
            },
        ] {
            let b = r.encode();
            assert!(!b.contains(&0));
            assert_eq!(Request::decode(&b), Ok(r));
        }
        // The forms older peers send and expect are unchanged.
        assert_eq!(
            std::str::from_utf8(
                &Request::Sink {
                    size: 5,
                    digest: true,
                }
                .encode()
            )
            .ok(),
            Some(r#"{"v":1,"op":"sink","size":5}"#)
        );
        assert_eq!(
            Request::decode(br#"{"v":1,"op":"put","name":"x","size":3}"#),
            Ok(Request::Put {
                name: "x".into(),
                size: Some(3),
                mtime: None,
                mode: None,
                resume: false
            })
        );
        assert!(Request::decode(b"junk").is_err());
        assert!(Request::decode(br#"{"v":1,"op":"sink"}"#).is_err());
        let resp = Response {
            size: Some(9),
            from: Some(4),
            prefix: Some("cd".into()),
            ..Response::default()
        };
        assert_eq!(Response::decode(&resp.encode()), resp);
        assert_eq!(
            std::str::from_utf8(&Response::default().encode()).ok(),
            Some(r#"{"v":1}"#)
        );
        assert_eq!(Response::decode(b"\xff"), Response::default());
    }

    /// M15: the fields of a directory's `get`, and what an older client's
    /// OPEN (no `bundle`) decodes to: a request that cannot take one.
    #[test]
    fn a_directory_get_says_bundle_both_ways() {
        let req = Request::Get {
            name: "tree".into(),
            have: None,
            bundle: true,
            skip: None,
        };
        assert_eq!(
            std::str::from_utf8(&req.encode()).ok(),
            Some(r#"{"v":1,"op":"get","name":"tree","bundle":true}"#)
        );
        assert_eq!(
            Request::decode(br#"{"v":1,"op":"get","name":"tree"}"#),
            Ok(Request::Get {
                name: "tree".into(),
                have: None,
                bundle: false,
                skip: None,
            })
        );
        let resp = Response {
            bundle: true,
            total: Some(4096),
            ..Response::default()
        };
        assert_eq!(
            std::str::from_utf8(&resp.encode()).ok(),
            Some(r#"{"v":1,"bundle":true,"total":4096}"#)
        );
        assert_eq!(Response::decode(&resp.encode()), resp);
    }

    /// M17: the list a `get` client uploads, and the `get` that names it;
    /// an older server reads the list's OPEN as an unknown operation (the
    /// client then fetches everything), an older client never says `skip`.
    #[test]
    fn a_have_list_and_the_get_that_names_it() {
        let have = Request::Have {
            token: [0x0f; TOKEN],
            key: [0xa0; 32],
            quick: Quick::Times,
        };
        let text = format!(
            r#"{{"v":1,"op":"have","key":"{}","token":"{}"}}"#,
            "a0".repeat(32),
            "0f".repeat(TOKEN)
        );
        assert_eq!(
            std::str::from_utf8(&have.encode()).ok(),
            Some(text.as_str())
        );
        let get = Request::Get {
            name: "tree".into(),
            have: None,
            bundle: true,
            skip: Some([0x0f; TOKEN]),
        };
        let text = format!(
            r#"{{"v":1,"op":"get","name":"tree","bundle":true,"skip":"{}"}}"#,
            "0f".repeat(TOKEN)
        );
        assert_eq!(std::str::from_utf8(&get.encode()).ok(), Some(text.as_str()));
        // A token or key of the wrong length, or none, is refused.
        for bad in [
            format!(r#"{{"v":1,"op":"have","key":"{}"}}"#, "a0".repeat(32)),
            format!(
                r#"{{"v":1,"op":"have","key":"{}","token":"0f0f"}}"#,
                "a0".repeat(32)
            ),
            format!(r#"{{"v":1,"op":"have","token":"{}"}}"#, "0f".repeat(TOKEN)),
            r#"{"v":1,"op":"get","name":"tree","skip":"zz"}"#.to_string(),
        ] {
            assert!(Request::decode(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    /// M18: `--checksum` says `"content":true` in `same` and `have`; a
    /// request without it (an older peer's, or without `--checksum`)
    /// decodes to times, and times are encoded as before (no field).
    #[test]
    fn same_and_have_say_content_only_with_checksum() {
        let key = "a0".repeat(32);
        let token = "0f".repeat(TOKEN);
        for (quick, tail) in [(Quick::Times, ""), (Quick::Content, r#","content":true"#)] {
            let same = Request::Same {
                names: vec!["t".into()],
                key: [0xa0; 32],
                quick,
            };
            let text = format!(r#"{{"v":1,"op":"same","names":["t"],"key":"{key}"{tail}}}"#);
            assert_eq!(
                std::str::from_utf8(&same.encode()).ok(),
                Some(text.as_str())
            );
            assert_eq!(Request::decode(text.as_bytes()), Ok(same));
            let have = Request::Have {
                token: [0x0f; TOKEN],
                key: [0xa0; 32],
                quick,
            };
            let text = format!(r#"{{"v":1,"op":"have","key":"{key}","token":"{token}"{tail}}}"#);
            assert_eq!(
                std::str::from_utf8(&have.encode()).ok(),
                Some(text.as_str())
            );
            assert_eq!(Request::decode(text.as_bytes()), Ok(have));
        }
        let explicit =
            format!(r#"{{"v":1,"op":"same","names":["t"],"key":"{key}","content":false}}"#);
        assert!(matches!(
            Request::decode(explicit.as_bytes()),
            Ok(Request::Same {
                quick: Quick::Times,
                ..
            })
        ));
    }
}
