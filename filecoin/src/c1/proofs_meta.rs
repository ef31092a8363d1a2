//! The first pass over a C1 output's vanilla proofs: counted per
//! partition, with the first proof's data-tree path length, never kept.

use std::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess};
use serde::de::{SeqAccess, Visitor};

/// The vanilla proofs, counted: proofs per partition, the length of the
/// first proof's data-tree path, and the proof shape's name where
/// filecoin-proofs-api's form nests them under one.
#[derive(Default)]
pub(super) struct ProofsMeta {
    pub(super) shape: Option<String>,
    pub(super) per_partition: Vec<usize>,
    pub(super) data_path_len: Option<usize>,
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
