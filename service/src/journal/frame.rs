//! The journal file's format: its header, a frame's marker, length and
//! CRC-32C, the payloads frames hold (a job's record, a removal, the
//! journal's instance and sequence floor), the frames written for each,
//! and what a damaged frame's first payload bytes seem to be about.

use prost::Message;

use super::Record;

/// The file's first bytes.
pub(super) const HEADER: &[u8; 16] = b"cuda-prover-jnl1";
/// The first bytes of every frame.
pub(super) const FRAME_MAGIC: [u8; 4] = [0xc5, b'J', b'R', 0x9e];
/// Marker, payload length (u32 LE), CRC-32C of the length and payload.
pub(super) const FRAME_HEAD: u64 = 12;
/// Larger payloads are damage (requests are at most 256 MiB).
pub(super) const MAX_PAYLOAD: u64 = 1 << 30;

/// The journal's instance and sequence floor, written first.
#[derive(Clone, PartialEq, Message)]
pub(super) struct Meta {
    #[prost(uint64, tag = "1")]
    pub(super) instance: u64,
    /// One above the largest sequence number ever journaled: ids are never
    /// issued twice, even once every record has been dropped.
    #[prost(uint64, tag = "2")]
    pub(super) next_seq: u64,
}

/// A frame's payload.
#[derive(Clone, PartialEq, Message)]
pub(super) struct Entry {
    #[prost(oneof = "Op", tags = "1, 2, 3")]
    pub(super) op: Option<Op>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
#[allow(clippy::large_enum_variant)]
pub(super) enum Op {
    /// A job's record (it replaces the job's earlier one).
    #[prost(message, tag = "1")]
    Put(Record),
    /// A job's record is dropped.
    #[prost(uint64, tag = "2")]
    Remove(u64),
    #[prost(message, tag = "3")]
    Meta(Meta),
}

const TAG_PUT: u32 = 1;
const TAG_REMOVE: u32 = 2;
const TAG_META: u32 = 3;

// CRC-32C (Castagnoli), the reflected polynomial.
const CRC_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82f6_3b78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

pub(super) fn crc32c(parts: &[&[u8]]) -> u32 {
    let mut c = !0u32;
    for p in parts {
        for &b in *p {
            c = CRC_TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
        }
    }
    !c
}

/// A frame around `payload`.
fn frame(payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_le_bytes();
    let mut f = Vec::with_capacity(FRAME_HEAD as usize + payload.len());
    f.extend_from_slice(&FRAME_MAGIC);
    f.extend_from_slice(&len);
    f.extend_from_slice(&crc32c(&[&len, payload]).to_le_bytes());
    f.extend_from_slice(payload);
    f
}

pub(super) fn put_frame(r: &Record) -> Vec<u8> {
    let mut p = Vec::with_capacity(prost::encoding::message::encoded_len(TAG_PUT, r));
    prost::encoding::message::encode(TAG_PUT, r, &mut p);
    frame(&p)
}

pub(super) fn remove_frame(seq: u64) -> Vec<u8> {
    let mut p = Vec::new();
    prost::encoding::uint64::encode(TAG_REMOVE, &seq, &mut p);
    frame(&p)
}

pub(super) fn meta_frame(instance: u64, next_seq: u64) -> Vec<u8> {
    let mut p = Vec::new();
    prost::encoding::message::encode(TAG_META, &Meta { instance, next_seq }, &mut p);
    frame(&p)
}

/// What the first bytes of a frame's payload seem to be about (from a
/// frame that does not check out: a guess, unless only its end is lost).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum About {
    Record(u64),
    Removal(u64),
    Meta,
}

fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &x) in b.iter().enumerate().take(10) {
        v |= ((x & 0x7f) as u64) << (7 * i);
        if x & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

pub(super) fn about(payload: &[u8]) -> Option<About> {
    match *payload.first()? {
        // Field 1, a message: its length, then the record's field 1 (seq).
        0x0a => {
            let (_, n) = varint(&payload[1..])?;
            let rest = &payload[1 + n..];
            if *rest.first()? != 0x08 {
                return None;
            }
            varint(&rest[1..]).map(|(seq, _)| About::Record(seq))
        }
        0x10 => varint(&payload[1..]).map(|(seq, _)| About::Removal(seq)),
        0x1a => Some(About::Meta),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_is_castagnolis() {
        assert_eq!(crc32c(&[b"123456789"]), 0xe306_9283);
        assert_eq!(crc32c(&[b"1234", b"56789"]), 0xe306_9283);
    }
}
