//! Sumcheck rounds and folds of the core (host backend, through the ABI)
//! against a direct computation with Plonky3's field.

use cuda_prover_gkr::Placement;
use cuda_prover_gkr::{from_bb4, random_ext, to_bb4, Bb4, Context, Ext, Sumcheck, SumcheckTerm};
use p3_field::PrimeCharacteristicRing;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

// g(t) = sum_j sum_terms coeff * prod lerp(T[j], T[j + h], t).
fn direct_round(tables: &[Vec<Ext>], terms: &[(Ext, Vec<usize>)], degree: usize) -> Vec<Ext> {
    let h = tables[0].len() / 2;
    (0..=degree)
        .map(|t| {
            let t = Ext::from_u32(t as u32);
            let mut sum = Ext::ZERO;
            for j in 0..h {
                for (c, fs) in terms {
                    let mut p = *c;
                    for &f in fs {
                        p *= tables[f][j] + t * (tables[f][j + h] - tables[f][j]);
                    }
                    sum += p;
                }
            }
            sum
        })
        .collect()
}

fn fold(t: &mut Vec<Ext>, r: Ext) {
    let h = t.len() / 2;
    for j in 0..h {
        t[j] = t[j] + r * (t[j + h] - t[j]);
    }
    t.truncate(h);
}

#[test]
fn rounds_and_folds_match_direct_computation() {
    // Two simulated devices, several threads each: chunked sums must not
    // change a bit.
    let ctx = Context::host(2).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let m = 9;
    let mut tables: Vec<Vec<Ext>> = (0..5)
        .map(|_| (0..1 << m).map(|_| random_ext(&mut rng)).collect())
        .collect();
    let terms: Vec<(Ext, Vec<usize>)> = vec![
        (Ext::ONE, vec![0, 1, 2, 3]),
        (random_ext(&mut rng), vec![4]),
        (random_ext(&mut rng), vec![1, 1, 4]),
        (random_ext(&mut rng), vec![2, 3]),
    ];
    let raw_terms: Vec<SumcheckTerm> = terms
        .iter()
        .map(|(c, f)| SumcheckTerm {
            coeff: to_bb4(c),
            factors: f.iter().map(|&x| x as u32).collect(),
        })
        .collect();
    let raw: Vec<Vec<Bb4>> = tables
        .iter()
        .map(|t| t.iter().map(to_bb4).collect())
        .collect();
    let refs: Vec<&[Bb4]> = raw.iter().map(|t| t.as_slice()).collect();
    let mut sc = Sumcheck::new(&ctx, &Placement::on(1), 5, &refs).unwrap();
    assert_eq!(sc.device(), 1);
    let mut claim = None;
    for round in 0..m {
        let want = direct_round(&tables, &terms, 4);
        let got: Vec<Ext> = sc
            .round(&raw_terms, 4)
            .unwrap()
            .iter()
            .map(from_bb4)
            .collect();
        assert_eq!(got, want, "round {round}");
        if let Some(c) = claim {
            assert_eq!(
                got[0] + got[1],
                c,
                "round {round}: g(0) + g(1) is the previous claim"
            );
        }
        let r = random_ext(&mut rng);
        claim = Some(cuda_prover_gkr::interpolate(&got, r));
        sc.fold(to_bb4(&r)).unwrap();
        for t in &mut tables {
            fold(t, r);
        }
        // A degree above what the terms need is allowed; below is refused.
        if round == 0 {
            assert!(sc.round(&raw_terms, 3).is_err());
        }
    }
    assert_eq!(sc.vars_left(), 0);
    let vals: Vec<Ext> = sc.values(0).unwrap().iter().map(from_bb4).collect();
    let finals: Vec<Ext> = tables.iter().map(|t| t[0]).collect();
    assert_eq!(vals, finals);
    // The last claim is the terms at the final values.
    let at_end: Ext = terms
        .iter()
        .map(|(c, fs)| fs.iter().fold(*c, |p, &f| p * finals[f]))
        .sum();
    assert_eq!(claim.unwrap(), at_end);
    assert!(sc.round(&raw_terms, 4).is_err(), "no variable left");
}

#[test]
fn trim_frees_the_tables() {
    let ctx = Context::host(1).unwrap();
    let t: Vec<Bb4> = (0..16u32).map(|i| [i, 0, 0, 0]).collect();
    let mut sc = Sumcheck::new(&ctx, &Placement::on(0), 1, &[&t]).unwrap();
    assert!(ctx.device_stats(0).unwrap().cache_bytes >= 16 * 16);
    let freed = ctx.trim(0).unwrap();
    assert!(freed >= 16 * 16, "freed {freed}");
    assert_eq!(ctx.device_stats(0).unwrap().cache_bytes, 0);
    let e = sc.fold([1, 0, 0, 0]).unwrap_err();
    assert!(e.message.contains("cp_device_trim"), "{e}");
}
