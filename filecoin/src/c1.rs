//! Commit-phase-1 files as sealing workers receive them.
//!
//! Three shapes are accepted:
//! - filecoin-proofs' `SealCommitPhase1Output` as serde JSON;
//! - filecoin-proofs-api's form of it (what filecoin-ffi and lotus hand
//!   around): the same fields plus `registered_proof`, with the vanilla
//!   proofs under a key naming the proof shape;
//! - the wrapper that lotus-bench and Curio give a C2 worker:
//!   `{"SectorNum", "Phase1Out" (base64 of one of the above), "SectorSize"}`.
//!
//! Everything the file says about the sector (its declared size, its
//! registered proof, the size its proofs imply) must agree with what the
//! caller asks for, or parsing fails with the disagreement spelled out. A
//! C1 output that is structurally empty (all-zero commitments, replica id
//! or seed; no vanilla proofs; a partition without proofs; another
//! partition count than its sector size's) is refused there too.
//!
//! Memory: the JSON is never held as a `serde_json::Value` (about 16 times
//! its size). [`C1File::parse`] reads it once, keeping only the few values
//! it checks and skipping the rest; [`C1File::output`] deserializes the
//! typed output straight from the bytes. The wrapper's base64 is decoded
//! as it is read, in both passes: no decoded copy is made.

use std::borrow::Cow;
use std::fmt;
use std::io::BufReader;
use std::marker::PhantomData;

use base64::engine::general_purpose::STANDARD;
use base64::read::DecoderReader;
use filecoin_hashers::Hasher;
use filecoin_proofs::{MerkleTreeTrait, SealCommitPhase1Output, VanillaSealProof};
use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess};
use serde::de::{Deserialize, Deserializer, Visitor};

use crate::config::{RegisteredSeal, SealVersion};
use crate::error::{FilecoinError, Result};
use crate::sector::SectorSize;

/// The largest C1 file read: a 32 GiB or 64 GiB sector's is about 50 MB,
/// and gRPC messages stop at 256 MiB (Curio's limit) as well.
pub const MAX_C1_BYTES: u64 = 256 << 20;

/// Reads a C1 file of at most [`MAX_C1_BYTES`]: a larger regular file is
/// refused before it is read, and a stream without a length (`/dev/zero`,
/// a pipe) is read only up to the limit, then refused.
pub fn read_c1_file(path: &std::path::Path) -> Result<Vec<u8>> {
    crate::input_file::InputFile {
        what: "C1 file",
        content: "C1",
        max_bytes: MAX_C1_BYTES,
        typical: "(a 32 GiB sector's is about 50 MB)",
    }
    .read(path)
}

/// A C1 file, parsed and checked; the typed output is read from its bytes
/// on demand ([`C1File::output`]).
#[derive(Debug, Clone)]
pub struct C1File<'a> {
    /// `SectorNum` of the lotus-bench / Curio wrapper.
    pub sector_num: Option<u64>,
    /// `SectorSize` of the wrapper.
    pub declared_size: Option<SectorSize>,
    /// `registered_proof` of filecoin-proofs-api's form.
    pub registered: Option<RegisteredSeal>,
    /// The size the vanilla proofs are for (from their data-tree paths).
    pub proofs_size: Option<SectorSize>,
    /// Partitions of vanilla proofs (each holds at least one proof).
    pub partitions: usize,
    source: Source<'a>,
}

/// What the caller knows about the sector (command-line flags).
#[derive(Debug, Clone, Copy, Default)]
pub struct Expected {
    pub size: Option<SectorSize>,
    pub registered: Option<RegisteredSeal>,
    pub sector_id: Option<u64>,
}

/// The fields of a commit-phase-1 output, in filecoin-proofs' form.
const REQUIRED: [&str; 6] = [
    "vanilla_proofs",
    "comm_r",
    "comm_d",
    "replica_id",
    "seed",
    "ticket",
];

/// The 32-byte values of a C1 output.
const HASHES: [&str; 5] = ["comm_r", "comm_d", "replica_id", "seed", "ticket"];

/// The values a sealed sector's C1 output never has all zero: its
/// commitments, replica id and seed are hashes or chain randomness.
const NEVER_ZERO: [&str; 4] = ["comm_d", "comm_r", "replica_id", "seed"];

impl<'a> C1File<'a> {
    /// Parses any of the three shapes and checks that the output is not
    /// empty; the vanilla proofs are skipped over (counted), not kept.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let top = Top::deserialize(&mut de)
            .and_then(|t| de.end().map(|()| t))
            .map_err(|e| json_error(e, "the C1 file", Some(bytes.len())))?;
        let (sector_num, declared_size, meta, source) = match top.phase1_out {
            Some(b64) => {
                let source = Source::Base64(b64);
                let meta = source
                    .read::<Meta>()
                    .map_err(|e| json_error(e, "Phase1Out", None))?;
                let size = top.sector_size.map(SectorSize::new).transpose()?;
                (top.sector_num, size, meta, source)
            }
            None => (None, None, top.inner, Source::Json(bytes)),
        };
        let registered = meta
            .registered_proof
            .as_deref()
            .map(str::parse::<RegisteredSeal>)
            .transpose()?;
        for (k, field) in REQUIRED.iter().enumerate() {
            let present = if k == 0 {
                meta.proofs.is_some()
            } else {
                meta.hashes[k - 1].is_some()
            };
            if !present {
                return Err(FilecoinError::Input(format!(
                    "the C1 output has no '{field}' (not a commit-phase-1 output?)"
                )));
            }
        }
        let zero: Vec<&str> = NEVER_ZERO
            .into_iter()
            .filter(|f| {
                let k = HASHES.iter().position(|h| h == f).unwrap_or(0);
                meta.hashes[k] == Some([0; 32])
            })
            .collect();
        if !zero.is_empty() {
            return Err(FilecoinError::Input(format!(
                "the C1 output's {} {} all zero: not the output of a sealed sector",
                zero.join(", "),
                if zero.len() == 1 { "is" } else { "are" }
            )));
        }
        let proofs = meta.proofs.unwrap_or_default();
        if let Some(shape) = &proofs.shape {
            check_api_shape(shape, registered)?;
        }
        if proofs.per_partition.is_empty() {
            return Err(FilecoinError::Input(
                "the C1 output has no vanilla proofs (an empty C1 output)".into(),
            ));
        }
        if let Some(k) = proofs.per_partition.iter().position(|&n| n == 0) {
            return Err(FilecoinError::Input(format!(
                "partition {k} of the C1 output's vanilla proofs holds no proofs"
            )));
        }
        let proofs_size = proofs
            .data_path_len
            .map(|n| {
                let bytes = 32u64.checked_shl(n as u32).unwrap_or(0);
                SectorSize::new(bytes).map_err(|_| {
                    FilecoinError::SectorSize(format!(
                        "the C1 output's data-tree paths have {n} levels: no supported sector \
                         size has that"
                    ))
                })
            })
            .transpose()?;
        Ok(Self {
            sector_num,
            declared_size,
            registered,
            proofs_size,
            partitions: proofs.per_partition.len(),
            source,
        })
    }

    /// The registered seal proof, checked against everything the file and
    /// the caller say. Without a registered proof anywhere, `V1_1` (what
    /// sealing workers use) of the agreed size.
    pub fn resolve(&self, expected: &Expected) -> Result<RegisteredSeal> {
        let mut sizes: Vec<(SectorSize, &str)> = Vec::new();
        if let Some(s) = expected.size {
            sizes.push((s, "the requested sector size"));
        }
        if let Some(r) = expected.registered {
            sizes.push((r.size, "the requested proof type"));
        }
        if let Some(s) = self.declared_size {
            sizes.push((s, "the file's SectorSize"));
        }
        if let Some(r) = self.registered {
            sizes.push((r.size, "the file's registered_proof"));
        }
        if let Some(s) = self.proofs_size {
            sizes.push((s, "its vanilla proofs"));
        }
        let Some(&(size, first)) = sizes.first() else {
            return Err(FilecoinError::SectorSize(
                "the C1 file does not say its sector size: give --sector-size".into(),
            ));
        };
        if let Some(&(other, what)) = sizes.iter().find(|(s, _)| *s != size) {
            return Err(FilecoinError::SectorSize(format!(
                "the C1 output is for a {other} sector according to {what}, but {size} according \
                 to {first}"
            )));
        }
        if let (Some(a), Some(b)) = (expected.registered, self.registered) {
            if a != b {
                return Err(FilecoinError::Input(format!(
                    "the C1 output is a {b} proof, not {a}"
                )));
            }
        }
        if let (Some(want), Some(have)) = (expected.sector_id, self.sector_num) {
            if want != have {
                return Err(FilecoinError::Identity(format!(
                    "the C1 file is for sector {have}, not sector {want}"
                )));
            }
        }
        let version = expected
            .registered
            .or(self.registered)
            .map(|r| r.version)
            .unwrap_or(SealVersion::V1_1);
        let registered = RegisteredSeal::new(size, version);
        let partitions = usize::from(registered.porep_config()?.partitions);
        if self.partitions != partitions {
            return Err(FilecoinError::Input(format!(
                "the C1 output has {} partitions of vanilla proofs; a {size} sector has {partitions}",
                self.partitions
            )));
        }
        Ok(registered)
    }

    /// filecoin-proofs' typed output for the sector's tree shape,
    /// deserialized from the file's bytes (no intermediate JSON value).
    pub fn output<Tree: 'static + MerkleTreeTrait>(&self) -> Result<SealCommitPhase1Output<Tree>> {
        self.source.read::<Typed<Tree>>().map(|t| t.0).map_err(|e| {
            FilecoinError::Input(format!(
                "the C1 output does not have the shape of this sector size's proofs: {e}"
            ))
        })
    }
}

/// filecoin-proofs-api's proof shape name (`StackedDrg2KiBV1`) must be
/// the registered proof's size.
fn check_api_shape(shape: &str, registered: Option<RegisteredSeal>) -> Result<()> {
    let shape_size = shape
        .strip_prefix("StackedDrg")
        .and_then(|s| s.strip_suffix("V1"))
        .ok_or_else(|| {
            FilecoinError::Input(format!("vanilla_proofs has an unknown shape '{shape}'"))
        })?
        .parse::<SectorSize>()?;
    match registered {
        Some(r) if r.size != shape_size => Err(FilecoinError::SectorSize(format!(
            "the C1 output's registered_proof is {r} but its vanilla proofs are {shape}"
        ))),
        _ => Ok(()),
    }
}

/// Where the output's JSON is.
#[derive(Debug, Clone)]
enum Source<'a> {
    /// The file's bytes are the output (plain or filecoin-proofs-api form).
    Json(&'a [u8]),
    /// The wrapper's Phase1Out: base64 of the output, decoded as read.
    Base64(Cow<'a, str>),
}

impl Source<'_> {
    /// `T` from the output's JSON, with nothing after it.
    fn read<T: DeserializeOwned>(&self) -> std::result::Result<T, serde_json::Error> {
        match self {
            Source::Json(bytes) => {
                let mut de = serde_json::Deserializer::from_slice(bytes);
                let t = T::deserialize(&mut de)?;
                de.end()?;
                Ok(t)
            }
            Source::Base64(text) => {
                let decoded = DecoderReader::new(text.trim().as_bytes(), &STANDARD);
                let reader = BufReader::with_capacity(64 << 10, decoded);
                let mut de = serde_json::Deserializer::from_reader(reader);
                let t = T::deserialize(&mut de)?;
                de.end()?;
                Ok(t)
            }
        }
    }
}

fn json_error(e: serde_json::Error, what: &str, len: Option<usize>) -> FilecoinError {
    if e.is_io() {
        // Only the base64 decoder reads through I/O.
        FilecoinError::Input(format!("{what} is not base64: {e}"))
    } else if e.is_eof() {
        FilecoinError::Input(format!(
            "{what} ends early (truncated?): {e}{}",
            len.map(|n| format!(" ({n} bytes read)"))
                .unwrap_or_default()
        ))
    } else if e.is_data() {
        FilecoinError::Input(format!("{what} is not a commit-phase-1 output: {e}"))
    } else {
        FilecoinError::Input(format!("{what} is not valid JSON: {e}"))
    }
}

/// Sets a field met once; a second occurrence is an error.
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T, key: &str) -> std::result::Result<(), E> {
    if slot.is_some() {
        return Err(E::custom(format!("duplicate field `{key}`")));
    }
    *slot = Some(value);
    Ok(())
}

/// The top level of a C1 file: the wrapper's fields, or the output's.
struct Top<'a> {
    phase1_out: Option<Cow<'a, str>>,
    sector_num: Option<u64>,
    sector_size: Option<u64>,
    inner: Meta,
}

impl<'de> Deserialize<'de> for Top<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Top<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object (a C1 output, or lotus' wrapper of one)")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Top<'de>, A::Error> {
                let mut top = Top {
                    phase1_out: None,
                    sector_num: None,
                    sector_size: None,
                    inner: Meta::default(),
                };
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "Phase1Out" => {
                            once(&mut top.phase1_out, map.next_value::<Text<'de>>()?.0, &key)?
                        }
                        "SectorNum" => once(&mut top.sector_num, map.next_value()?, &key)?,
                        "SectorSize" => once(&mut top.sector_size, map.next_value()?, &key)?,
                        _ => top.inner.field(&key, &mut map)?,
                    }
                }
                Ok(top)
            }
        }
        d.deserialize_map(V)
    }
}

/// A string borrowed from the input where it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a base64 string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> std::result::Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// What parsing keeps of an output: its registered proof, its 32-byte
/// values and an account of its vanilla proofs.
#[derive(Default)]
struct Meta {
    registered_proof: Option<String>,
    proofs: Option<ProofsMeta>,
    /// In the order of [`HASHES`].
    hashes: [Option<[u8; 32]>; 5],
}

impl Meta {
    /// Reads the value of `key` of an output's object (others are skipped).
    fn field<'de, A: MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
    ) -> std::result::Result<(), A::Error> {
        if key == "registered_proof" {
            once(&mut self.registered_proof, map.next_value()?, key)
        } else if key == "vanilla_proofs" {
            once(&mut self.proofs, map.next_value()?, key)
        } else if let Some(k) = HASHES.iter().position(|h| *h == key) {
            once(&mut self.hashes[k], map.next_value()?, key)
        } else {
            map.next_value::<IgnoredAny>().map(|_| ())
        }
    }
}

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Meta;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object (a C1 output)")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Meta, A::Error> {
                let mut meta = Meta::default();
                while let Some(key) = map.next_key::<String>()? {
                    meta.field(&key, &mut map)?;
                }
                Ok(meta)
            }
        }
        d.deserialize_map(V)
    }
}

/// The vanilla proofs, counted: proofs per partition, the length of the
/// first proof's data-tree path, and the proof shape's name where
/// filecoin-proofs-api's form nests them under one.
#[derive(Default)]
struct ProofsMeta {
    shape: Option<String>,
    per_partition: Vec<usize>,
    data_path_len: Option<usize>,
}

/// Where a proof's data-tree path is (`comm_d_proofs` is a binary tree of
/// one level: `Single`).
const DATA_PATH: &[&str] = &["comm_d_proofs", "data", "Single", "path", "path"];

impl<'de> Deserialize<'de> for ProofsMeta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ProofsMeta;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a list of partitions of vanilla proofs, or a proof shape's name mapped to one",
                )
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<ProofsMeta, A::Error> {
                let mut m = ProofsMeta::default();
                while let Some((n, path)) = seq.next_element_seed(PartitionMeta {
                    first: m.per_partition.is_empty(),
                })? {
                    m.per_partition.push(n);
                    m.data_path_len = m.data_path_len.or(path);
                }
                Ok(m)
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<ProofsMeta, A::Error> {
                let Some(shape) = map.next_key::<String>()? else {
                    return Err(de::Error::custom("vanilla_proofs is empty"));
                };
                let mut m: ProofsMeta = map.next_value()?;
                if m.shape.is_some() {
                    return Err(de::Error::custom(
                        "vanilla_proofs nests a proof shape inside another",
                    ));
                }
                if map.next_key::<IgnoredAny>()?.is_some() {
                    return Err(de::Error::custom(
                        "vanilla_proofs has more than one proof shape",
                    ));
                }
                m.shape = Some(shape);
                Ok(m)
            }
        }
        d.deserialize_any(V)
    }
}

/// One partition's proofs, counted; in the first partition, the first
/// proof's data-tree path length.
struct PartitionMeta {
    first: bool,
}

impl<'de> DeserializeSeed<'de> for PartitionMeta {
    type Value = (usize, Option<usize>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for PartitionMeta {
    type Value = (usize, Option<usize>);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a partition: a list of vanilla proofs")
    }
    fn visit_seq<A: SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let (mut n, mut path) = (0, None);
        if self.first {
            if let Some(p) = seq.next_element_seed(Dig(DATA_PATH))? {
                n = 1;
                path = p;
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok((n, path))
    }
}

/// Follows keys through nested objects to a list and counts its elements;
/// `None` where the value is laid out otherwise. Everything else is
/// skipped, not kept.
struct Dig(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Dig {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Dig {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            match self.0.split_first() {
                Some((want, rest)) if key == *want && found.is_none() => {
                    found = map.next_value_seed(Dig(rest))?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
    fn visit_seq<A: SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut n = 0;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok(self.0.is_empty().then_some(n))
    }
    fn visit_bool<E>(self, _: bool) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
}

/// filecoin-proofs' typed output, read from either form (the vanilla
/// proofs as a list, or under their proof shape's name).
struct Typed<Tree: 'static + MerkleTreeTrait>(SealCommitPhase1Output<Tree>);

impl<'de, Tree: 'static + MerkleTreeTrait> Deserialize<'de> for Typed<Tree> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V<Tree>(PhantomData<Tree>);
        impl<'de, Tree: 'static + MerkleTreeTrait> Visitor<'de> for V<Tree> {
            type Value = Typed<Tree>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object (a C1 output)")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Typed<Tree>, A::Error> {
                let mut proofs = None;
                let mut replica_id = None;
                let mut hashes: [Option<[u8; 32]>; 4] = [None; 4];
                const OTHERS: [&str; 4] = ["comm_r", "comm_d", "seed", "ticket"];
                while let Some(key) = map.next_key::<String>()? {
                    if key == "vanilla_proofs" {
                        once(&mut proofs, map.next_value::<TypedProofs<Tree>>()?.0, &key)?;
                    } else if key == "replica_id" {
                        let id: <Tree::Hasher as Hasher>::Domain = map.next_value()?;
                        once(&mut replica_id, id, &key)?;
                    } else if let Some(k) = OTHERS.iter().position(|h| *h == key) {
                        once(&mut hashes[k], map.next_value()?, &key)?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                let [comm_r, comm_d, seed, ticket] = hashes;
                let missing = |f: &'static str| <A::Error as de::Error>::missing_field(f);
                Ok(Typed(SealCommitPhase1Output {
                    vanilla_proofs: proofs.ok_or_else(|| missing("vanilla_proofs"))?,
                    comm_r: comm_r.ok_or_else(|| missing("comm_r"))?,
                    comm_d: comm_d.ok_or_else(|| missing("comm_d"))?,
                    replica_id: replica_id.ok_or_else(|| missing("replica_id"))?,
                    seed: seed.ok_or_else(|| missing("seed"))?,
                    ticket: ticket.ok_or_else(|| missing("ticket"))?,
                }))
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

type Partitions<Tree> = Vec<Vec<VanillaSealProof<Tree>>>;

/// The vanilla proofs, typed: a list of partitions, or one proof shape's
/// name mapped to one (checked by [`C1File::parse`]).
struct TypedProofs<Tree: 'static + MerkleTreeTrait>(Partitions<Tree>);

impl<'de, Tree: 'static + MerkleTreeTrait> Deserialize<'de> for TypedProofs<Tree> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V<Tree>(PhantomData<Tree>);
        impl<'de, Tree: 'static + MerkleTreeTrait> Visitor<'de> for V<Tree> {
            type Value = TypedProofs<Tree>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of partitions of vanilla proofs")
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(p) = seq.next_element()? {
                    out.push(p);
                }
                Ok(TypedProofs(out))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                if map.next_key::<IgnoredAny>()?.is_none() {
                    return Err(de::Error::custom("vanilla_proofs is empty"));
                }
                let out: Partitions<Tree> = map.next_value()?;
                if map.next_key::<IgnoredAny>()?.is_some() {
                    return Err(de::Error::custom(
                        "vanilla_proofs has more than one proof shape",
                    ));
                }
                Ok(TypedProofs(out))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}
