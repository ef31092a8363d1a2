//! Shape files: a [`ShapeData`] on disk, next to the params it belongs to.
//!
//! Layout (little-endian): the magic `CPSHAPE\0`, a format version (u32),
//! the fingerprint of the proving key the shape was checked against (32
//! bytes), the counts (constraints, inputs, aux, coefficients, entries of A,
//! B and C: u64 each), the row offsets of A, B, C (u64), their entries
//! (column u32, coefficient code u32), the coefficients (32 bytes each,
//! canonical), and a SHA-256 of everything before it. A file whose checksum,
//! version, sizes or key do not match is refused with a message that says
//! which.

use std::io::Write;
use std::path::Path;

use blstrs::Scalar;
use ff::PrimeField;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::key::ProvingKey;
use crate::shape::{Matrix, ShapeData, ShapeEntry};

const MAGIC: &[u8; 8] = b"CPSHAPE\0";
const VERSION: u32 = 1;
const HEADER: usize = 8 + 4 + 32 + 7 * 8;
const CHECKSUM: usize = 32;

fn put_u64s(out: &mut Vec<u8>, v: &[u64]) {
    out.reserve(v.len() * 8);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn put_entries(out: &mut Vec<u8>, v: &[ShapeEntry]) {
    out.reserve(v.len() * 8);
    for e in v {
        out.extend_from_slice(&e.col.to_le_bytes());
        out.extend_from_slice(&e.coeff.to_le_bytes());
    }
}

/// The file's bytes for `data` checked against `key`.
pub fn encode(data: &ShapeData, key: &ProvingKey) -> Result<Vec<u8>> {
    encode_for(data, &key.fingerprint())
}

/// The file's bytes for `data` tied to the key of fingerprint `fp`
/// ([`crate::vk_fingerprint`]): for a generator that has the verifying key
/// but has not loaded the key.
pub fn encode_for(data: &ShapeData, fp: &[u8; 32]) -> Result<Vec<u8>> {
    let mats = [&data.a, &data.b, &data.c];
    let rows = data.num_constraints() as u64;
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(fp);
    put_u64s(
        &mut out,
        &[
            rows,
            data.num_inputs,
            data.num_aux,
            data.coeffs.len() as u64,
            data.a.entries.len() as u64,
            data.b.entries.len() as u64,
            data.c.entries.len() as u64,
        ],
    );
    for m in mats {
        if m.row_ptr.len() as u64 != rows + 1 {
            return Err(Error::Invalid(
                "the shape's matrices have different row counts".into(),
            ));
        }
        put_u64s(&mut out, &m.row_ptr);
    }
    for m in mats {
        put_entries(&mut out, &m.entries);
    }
    for c in &data.coeffs {
        out.extend_from_slice(c.to_repr().as_ref());
    }
    let sum = Sha256::digest(&out);
    out.extend_from_slice(&sum);
    Ok(out)
}

/// Writes `data` to `path` (through a temporary file and a rename, so a
/// reader never sees half a file).
pub fn save(data: &ShapeData, key: &ProvingKey, path: &Path) -> Result<()> {
    save_for(data, &key.fingerprint(), path)
}

/// [`save`] for the key of fingerprint `fp`.
pub fn save_for(data: &ShapeData, fp: &[u8; 32], path: &Path) -> Result<()> {
    let bytes = encode_for(data, fp)?;
    let tmp = path.with_extension(format!("shape-tmp{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::Invalid(format!("cannot write shape file {}: {e}", path.display()))
    })
}

/// Reads a shape file and checks it against `key`.
pub fn load(path: &Path, key: &ProvingKey) -> Result<ShapeData> {
    read(path)?.for_key(key)
}

/// A shape file read and checked in itself (magic, checksum, version,
/// sizes, coefficients), not yet against a key: what can be done while
/// the key itself is still loading. [`ShapeFile::for_key`] finishes it.
pub struct ShapeFile {
    path: std::path::PathBuf,
    fingerprint: [u8; 32],
    data: ShapeData,
}

impl ShapeFile {
    /// The fingerprint of the key the file was made for.
    pub fn fingerprint(&self) -> &[u8; 32] {
        &self.fingerprint
    }

    /// The shape, unchecked against any key.
    pub fn into_data(self) -> ShapeData {
        self.data
    }

    /// The shape, if the file was made for `key` (its fingerprint).
    pub fn for_key(self, key: &ProvingKey) -> Result<ShapeData> {
        made_for(&self.fingerprint, key)
            .map_err(|e| Error::Invalid(format!("shape file {}: {e}", self.path.display())))?;
        Ok(self.data)
    }
}

/// Whether a shape file of this fingerprint was made for `key`; the error
/// says it was not.
pub fn made_for(fingerprint: &[u8; 32], key: &ProvingKey) -> std::result::Result<(), String> {
    if *fingerprint != key.fingerprint() {
        return Err("made for another proving key (fingerprint mismatch)".into());
    }
    Ok(())
}

/// Reads a shape file without a key (see [`ShapeFile`]).
pub fn read(path: &Path) -> Result<ShapeFile> {
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::Invalid(format!("shape file {}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(Error::Invalid(format!(
            "shape file {}: not a regular file",
            path.display()
        )));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| Error::Invalid(format!("shape file {}: {e}", path.display())))?;
    let (fingerprint, data) = decode_any(&bytes)
        .map_err(|e| Error::Invalid(format!("shape file {}: {e}", path.display())))?;
    Ok(ShapeFile {
        path: path.to_path_buf(),
        fingerprint,
        data,
    })
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        s
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().expect("4 bytes"))
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().expect("8 bytes"))
    }
}

/// Parses the bytes of a shape file and checks them against `key`.
pub fn decode(bytes: &[u8], key: &ProvingKey) -> std::result::Result<ShapeData, String> {
    let (fp, data) = decode_any(bytes)?;
    made_for(&fp, key)?;
    Ok(data)
}

/// Parses the bytes of a shape file: the fingerprint of the key it was
/// made for, and the shape. The checksum over the whole file runs on a
/// thread of its own while the matrices are decoded on the others (8.9 GB
/// beside a 32 GiB PoRep key: one thread took 20 s for both); a mismatch
/// is reported before any decoding error, so a corrupt file is named as
/// corrupt.
fn decode_any(bytes: &[u8]) -> std::result::Result<([u8; 32], ShapeData), String> {
    if bytes.len() < HEADER + CHECKSUM || &bytes[..8] != MAGIC {
        return Err("not a shape file (bad magic or too short)".into());
    }
    let body = bytes.len() - CHECKSUM;
    std::thread::scope(|s| {
        let sum = s.spawn(|| Sha256::digest(&bytes[..body]).as_slice() == &bytes[body..]);
        let decoded = decode_body(bytes);
        let intact = sum
            .join()
            .map_err(|_| "the checksum's thread stopped".to_string())?;
        if !intact {
            return Err("checksum mismatch: the file is corrupt".into());
        }
        decoded
    })
}

/// Everything after the magic: version, fingerprint, sizes (checked
/// against the file's length before anything is allocated), matrices and
/// coefficients.
fn decode_body(bytes: &[u8]) -> std::result::Result<([u8; 32], ShapeData), String> {
    let mut r = Reader { b: bytes, at: 8 };
    let version = r.u32();
    if version != VERSION {
        return Err(format!(
            "format version {version}, this build reads version {VERSION}"
        ));
    }
    let fp: [u8; 32] = r.take(32).try_into().expect("32 bytes");
    let counts: Vec<u64> = (0..7).map(|_| r.u64()).collect();
    let (rows, ni, na, nc) = (counts[0], counts[1], counts[2], counts[3]);
    let nnz = [counts[4], counts[5], counts[6]];
    // The sizes must add up to the file's length exactly, before anything
    // is allocated from them.
    let expected = (|| {
        let offsets = rows.checked_add(1)?.checked_mul(8 * 3)?;
        let entries = nnz
            .iter()
            .try_fold(0u64, |a, &n| a.checked_add(n.checked_mul(8)?))?;
        let coeffs = nc.checked_mul(32)?;
        (HEADER as u64 + CHECKSUM as u64)
            .checked_add(offsets)?
            .checked_add(entries)?
            .checked_add(coeffs)
    })();
    if expected != Some(bytes.len() as u64) {
        return Err(format!(
            "sizes in the header ({rows} rows, {} entries, {nc} coefficients) do not match the file's {} bytes",
            nnz.iter().sum::<u64>(),
            bytes.len()
        ));
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut mats = [Matrix::default(), Matrix::default(), Matrix::default()];
    for m in &mut mats {
        m.row_ptr = u64s(r.take((rows as usize + 1) * 8), threads);
    }
    for (m, &n) in mats.iter_mut().zip(&nnz) {
        m.entries = entries(r.take(n as usize * 8), threads);
    }
    let mut coeffs = Vec::with_capacity(nc as usize);
    for i in 0..nc {
        let mut repr = <Scalar as PrimeField>::Repr::default();
        repr.as_mut().copy_from_slice(r.take(32));
        let c: Option<Scalar> = Scalar::from_repr(repr).into();
        coeffs.push(c.ok_or_else(|| format!("coefficient {i} is not a field element"))?);
    }
    let [a, b, c] = mats;
    Ok((
        fp,
        ShapeData {
            num_inputs: ni,
            num_aux: na,
            a,
            b,
            c,
            coeffs,
        },
    ))
}

/// Elements per thread of the parallel conversions, at least.
const PER_THREAD_MIN: usize = 1 << 16;

/// The little-endian u64s of `src` (a multiple of 8 bytes), converted on
/// up to `threads` threads.
fn u64s(src: &[u8], threads: usize) -> Vec<u64> {
    let n = src.len() / 8;
    let per = n.div_ceil(threads.max(1)).max(PER_THREAD_MIN);
    let mut out = vec![0u64; n];
    std::thread::scope(|s| {
        for (o, i) in out.chunks_mut(per).zip(src.chunks(per * 8)) {
            s.spawn(move || {
                for (x, c) in o.iter_mut().zip(i.chunks_exact(8)) {
                    *x = u64::from_le_bytes(c.try_into().expect("8 bytes"));
                }
            });
        }
    });
    out
}

/// The entries (column u32, coefficient code u32) of `src` (8 bytes
/// each), converted on up to `threads` threads.
fn entries(src: &[u8], threads: usize) -> Vec<ShapeEntry> {
    let n = src.len() / 8;
    let per = n.div_ceil(threads.max(1)).max(PER_THREAD_MIN);
    let mut out: Vec<ShapeEntry> = Vec::with_capacity(n);
    std::thread::scope(|s| {
        for (o, i) in out.spare_capacity_mut()[..n]
            .chunks_mut(per)
            .zip(src.chunks(per * 8))
        {
            s.spawn(move || {
                for (x, c) in o.iter_mut().zip(i.chunks_exact(8)) {
                    x.write(ShapeEntry {
                        col: u32::from_le_bytes(c[..4].try_into().expect("4 bytes")),
                        coeff: u32::from_le_bytes(c[4..].try_into().expect("4 bytes")),
                    });
                }
            });
        }
    });
    // SAFETY: the chunks of spare_capacity_mut()[..n] cover elements 0..n,
    // and chunk k of `src` holds exactly as many 8-byte entries as chunk k
    // of the output (both are cut at multiples of `per` entries, src being
    // 8 * n bytes), so every thread wrote every element of its chunk; the
    // scope joined them all (a panic would have left through it before
    // this line).
    unsafe { out.set_len(n) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shape of `rows` rows with up to 3 entries each (columns and codes
    /// from a counter) and a few coefficients.
    fn shape(rows: usize) -> ShapeData {
        let matrix = |salt: u32| {
            let mut m = Matrix::default();
            m.row_ptr.push(0);
            for r in 0..rows as u32 {
                for k in 0..(r + salt) % 4 {
                    m.entries.push(ShapeEntry {
                        col: r.wrapping_mul(2654435761).wrapping_add(k),
                        coeff: (r ^ salt) % 5,
                    });
                }
                m.row_ptr.push(m.entries.len() as u64);
            }
            m
        };
        ShapeData {
            num_inputs: 3,
            num_aux: rows as u64,
            a: matrix(1),
            b: matrix(2),
            c: matrix(3),
            coeffs: (2..5u64).map(Scalar::from).collect(),
        }
    }

    #[test]
    fn the_parallel_conversions_equal_one_threads() {
        let bytes: Vec<u8> = (0..(3 * PER_THREAD_MIN + 77) * 8)
            .map(|i| (i * 131 % 251) as u8)
            .collect();
        let one = u64s(&bytes, 1);
        let want: Vec<u64> = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(one, want);
        let want_entries = entries(&bytes, 1);
        for threads in [2, 3, 8, 64] {
            assert_eq!(u64s(&bytes, threads), want, "{threads} threads");
            assert_eq!(entries(&bytes, threads), want_entries, "{threads} threads");
        }
        assert_eq!(want_entries.len(), bytes.len() / 8);
        assert_eq!(
            want_entries[1].col,
            u32::from_le_bytes(bytes[8..12].try_into().unwrap())
        );
        assert_eq!(
            want_entries[1].coeff,
            u32::from_le_bytes(bytes[12..16].try_into().unwrap())
        );
        assert!(u64s(&[], 4).is_empty() && entries(&[], 4).is_empty());
    }

    #[test]
    fn a_shape_of_several_chunks_round_trips_and_a_flip_is_corrupt() {
        let data = shape(200_000);
        assert!(data.a.entries.len() > 2 * PER_THREAD_MIN);
        let fp = [7u8; 32];
        let bytes = encode_for(&data, &fp).unwrap();
        let (got_fp, got) = decode_any(&bytes).unwrap();
        assert_eq!(got_fp, fp);
        assert_eq!(got, data);
        // A flipped byte in the entries, which decode fine: the checksum
        // names the file corrupt.
        let mut flipped = bytes.clone();
        flipped[bytes.len() / 2] ^= 1;
        assert!(decode_any(&flipped).unwrap_err().contains("checksum"));
        // A flipped version byte: corrupt too, before the version is read.
        let mut flipped = bytes;
        flipped[8] ^= 1;
        assert!(decode_any(&flipped).unwrap_err().contains("checksum"));
    }
}
