//! Non-panicking big-endian field access over byte ranges.
//!
//! Every view in this crate checks lengths once, up front, and then reads fields through these
//! helpers. They use `get`/`get_mut` rather than indexing, so even a wrong length check cannot
//! turn into a panic in release builds: a read outside the buffer yields 0 and a write outside it
//! does nothing. Such an access is a bug in this crate, so debug builds (and fuzzing builds, which
//! keep debug assertions) trip a `debug_assert!` to make it loud.

use core::ops::Range;

/// A byte range inside a packet, as in smoltcp's `wire::field`.
pub(crate) type Field = Range<usize>;

pub(crate) fn get_u8(buf: &[u8], at: usize) -> u8 {
    let b = buf.get(at).copied();
    debug_assert!(b.is_some(), "read past checked length at {at}");
    b.unwrap_or(0)
}

pub(crate) fn get_u16(buf: &[u8], f: Field) -> u16 {
    let b = buf.get(f.clone()).and_then(|b| <[u8; 2]>::try_from(b).ok());
    debug_assert!(b.is_some(), "read past checked length at {f:?}");
    b.map_or(0, u16::from_be_bytes)
}

pub(crate) fn get_u32(buf: &[u8], f: Field) -> u32 {
    let b = buf.get(f.clone()).and_then(|b| <[u8; 4]>::try_from(b).ok());
    debug_assert!(b.is_some(), "read past checked length at {f:?}");
    b.map_or(0, u32::from_be_bytes)
}

pub(crate) fn set_u8(buf: &mut [u8], at: usize, v: u8) {
    let b = buf.get_mut(at);
    debug_assert!(b.is_some(), "write past checked length at {at}");
    if let Some(b) = b {
        *b = v;
    }
}

pub(crate) fn set_u16(buf: &mut [u8], f: Field, v: u16) {
    set_bytes(buf, f, &v.to_be_bytes());
}

pub(crate) fn set_u32(buf: &mut [u8], f: Field, v: u32) {
    set_bytes(buf, f, &v.to_be_bytes());
}

/// Copies `src` into `buf[f]`; the range must be exactly `src.len()` long.
pub(crate) fn set_bytes(buf: &mut [u8], f: Field, src: &[u8]) {
    let dst = buf.get_mut(f.clone()).filter(|d| d.len() == src.len());
    debug_assert!(dst.is_some(), "write past checked length at {f:?}");
    if let Some(dst) = dst {
        dst.copy_from_slice(src);
    }
}

/// Zeroes `buf[f]` (alignment padding and MBZ fields).
pub(crate) fn zero(buf: &mut [u8], f: Field) {
    let dst = buf.get_mut(f.clone());
    debug_assert!(dst.is_some(), "write past checked length at {f:?}");
    if let Some(dst) = dst {
        dst.fill(0);
    }
}
