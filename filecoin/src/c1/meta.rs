//! The first pass over a C1 file: its top level (the wrapper's fields or
//! the output's) and the few values of the output that parsing checks;
//! everything else is skipped, not kept.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::file::HASHES;
use super::proofs_meta::ProofsMeta;

/// Sets a field met once; a second occurrence is an error.
pub(super) fn once<T, E: de::Error>(
    slot: &mut Option<T>,
    value: T,
    key: &str,
) -> std::result::Result<(), E> {
    if slot.is_some() {
        return Err(E::custom(format!("duplicate field `{key}`")));
    }
    *slot = Some(value);
    Ok(())
}

/// The top level of a C1 file: the wrapper's fields, or the output's.
pub(super) struct Top<'a> {
    pub(super) phase1_out: Option<Cow<'a, str>>,
    pub(super) sector_num: Option<u64>,
    pub(super) sector_size: Option<u64>,
    pub(super) inner: Meta,
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
pub(super) struct Meta {
    pub(super) registered_proof: Option<String>,
    pub(super) proofs: Option<ProofsMeta>,
    /// In the order of [`HASHES`].
    pub(super) hashes: [Option<[u8; 32]>; 5],
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
