//! The typed pass: filecoin-proofs' `SealCommitPhase1Output` deserialized
//! straight from a C1 output's JSON, in either form of its vanilla proofs.

use std::fmt;
use std::marker::PhantomData;

use filecoin_hashers::Hasher;
use filecoin_proofs::{MerkleTreeTrait, SealCommitPhase1Output, VanillaSealProof};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::meta::once;

/// filecoin-proofs' typed output, read from either form (the vanilla
/// proofs as a list, or under their proof shape's name).
pub(super) struct Typed<Tree: 'static + MerkleTreeTrait>(pub(super) SealCommitPhase1Output<Tree>);

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
/// name mapped to one (checked by [`C1File::parse`](super::C1File::parse)).
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
