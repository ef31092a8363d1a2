//! A tower proof and its byte encoding: "GKRT", version 1, kind (u8),
//! log_size (u32 LE), the root, then per layer its rounds (u32 count, u8
//! values per round, the values) and its final values (u8 count, values).
//! An element is its four canonical coefficients, u32 LE each.

use crate::{from_bb4, to_bb4, Ext, GkrError, TowerKind};

/// What reduces the claim on one layer to a claim on the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerProof {
    /// The round polynomials' values at 0..=3, one per variable.
    pub rounds: Vec<Vec<Ext>>,
    /// The child layer's halves at the challenges: L, R (product) or
    /// pL, pR, qL, qR (fraction).
    pub values: Vec<Ext>,
}

/// A proof that the root is the product (or the fraction sum) of 2^log_size
/// values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TowerProof {
    pub kind: TowerKind,
    pub log_size: u32,
    /// [product] or [numerator, denominator].
    pub root: Vec<Ext>,
    /// Layers 0..log_size: layer i reduces the claim on layer i (2^i values).
    pub layers: Vec<LayerProof>,
}

const MAGIC: &[u8; 4] = b"GKRT";
const VERSION: u8 = 1;
const P: u32 = 0x7800_0001;

fn put_ext(out: &mut Vec<u8>, x: &Ext) {
    for c in to_bb4(x) {
        out.extend_from_slice(&c.to_le_bytes());
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], GkrError> {
        if self.b.len() - self.at < n {
            return Err(GkrError::Malformed(format!(
                "truncated at byte {} (wanted {n} more)",
                self.at
            )));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, GkrError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, GkrError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn ext(&mut self) -> Result<Ext, GkrError> {
        let mut c = [0u32; 4];
        for v in &mut c {
            *v = self.u32()?;
            if *v >= P {
                return Err(GkrError::Malformed(format!(
                    "coefficient {v} at byte {} is not below p",
                    self.at - 4
                )));
            }
        }
        Ok(from_bb4(&c))
    }
    fn exts(&mut self, n: usize) -> Result<Vec<Ext>, GkrError> {
        (0..n).map(|_| self.ext()).collect()
    }
}

impl TowerProof {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.push(match self.kind {
            TowerKind::Product => 0,
            TowerKind::Fraction => 1,
        });
        out.extend_from_slice(&self.log_size.to_le_bytes());
        out.push(self.root.len() as u8);
        for x in &self.root {
            put_ext(&mut out, x);
        }
        for l in &self.layers {
            out.extend_from_slice(&(l.rounds.len() as u32).to_le_bytes());
            out.push(l.rounds.first().map(|r| r.len()).unwrap_or(0) as u8);
            for r in &l.rounds {
                for x in r {
                    put_ext(&mut out, x);
                }
            }
            out.push(l.values.len() as u8);
            for x in &l.values {
                put_ext(&mut out, x);
            }
        }
        out
    }

    pub fn from_bytes(b: &[u8]) -> Result<Self, GkrError> {
        let mut r = Reader { b, at: 0 };
        if r.take(4)? != MAGIC {
            return Err(GkrError::Malformed("not a tower proof (magic)".into()));
        }
        let v = r.u8()?;
        if v != VERSION {
            return Err(GkrError::Malformed(format!(
                "version {v}, expected {VERSION}"
            )));
        }
        let kind = match r.u8()? {
            0 => TowerKind::Product,
            1 => TowerKind::Fraction,
            k => return Err(GkrError::Malformed(format!("unknown kind {k}"))),
        };
        let log_size = r.u32()?;
        if log_size == 0 || log_size > crate::shards::MAX_LOG_SIZE {
            return Err(GkrError::Malformed(format!(
                "log_size {log_size} out of range"
            )));
        }
        let nroot = r.u8()? as usize;
        let root = r.exts(nroot)?;
        let mut layers = Vec::with_capacity(log_size as usize);
        for _ in 0..log_size {
            let nrounds = r.u32()? as usize;
            let per = r.u8()? as usize;
            if nrounds > log_size as usize || per > 8 {
                return Err(GkrError::Malformed(format!(
                    "layer with {nrounds} rounds of {per} values"
                )));
            }
            let rounds = (0..nrounds)
                .map(|_| r.exts(per))
                .collect::<Result<Vec<_>, _>>()?;
            let nv = r.u8()? as usize;
            let values = r.exts(nv)?;
            layers.push(LayerProof { rounds, values });
        }
        if r.at != b.len() {
            return Err(GkrError::Malformed(format!(
                "{} trailing bytes",
                b.len() - r.at
            )));
        }
        Ok(Self {
            kind,
            log_size,
            root,
            layers,
        })
    }
}
