//! Modal problems shared by the joint and modal MILP tests.

#![allow(dead_code, reason = "each test binary uses a part")]

use concerto_rcpsp::{ModalProblem, ProblemBuilder, Region};

/// A training step in miniature: `x` (compute 6) and two regions whose "split" mode moves 6
/// units of compute into a transfer of 9 on the one comm channel. Each split alone saves 6
/// (18 -> 12); both queue 18 on the channel (18). Gains measured alone say "both".
pub(crate) fn interaction() -> ModalProblem {
    let mut b = ProblemBuilder::new();
    let compute = b.resource("compute", 1);
    let comm = b.resource("comm", 1);
    let x = b.activity("x", 6);
    b.demand(x, compute, 1);
    let mut regions = Vec::new();
    for name in ["a", "b"] {
        let c = b.activity(format!("{name}.unsplit"), 6);
        b.demand(c, compute, 1);
        let t = b.activity(format!("{name}.split"), 9);
        b.demand(t, comm, 1);
        regions.push(Region {
            name: name.into(),
            modes: vec![vec![c], vec![t]],
        });
    }
    ModalProblem::new(b.build().unwrap(), regions).unwrap()
}

/// A random modal problem: a chain-free mix of mandatory activities and 1-2 regions of 2-3
/// modes (an activity sometimes shared by two modes of its region), on 1-2 resources,
/// precedences along the creation order.
pub(crate) fn random_problem(seed: u64) -> ModalProblem {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = |m: u64| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s % m
    };
    let mut b = ProblemBuilder::new();
    let resources: Vec<_> = (0..1 + next(2))
        .map(|k| b.resource(format!("r{k}"), 1 + next(2) as u32))
        .collect();
    let mut acts = Vec::new();
    let mut kinds: Vec<Option<(usize, usize)>> = Vec::new();
    let regions = 1 + next(2) as usize;
    let mut modes: Vec<Vec<Vec<_>>> = vec![Vec::new(); regions];
    for (r, region) in modes.iter_mut().enumerate() {
        for k in 0..2 + next(2) as usize {
            region.push(Vec::new());
            for _ in 0..1 + next(2) {
                kinds.push(Some((r, k)));
            }
        }
    }
    for _ in 0..3 + next(5) {
        kinds.push(None);
    }
    // Shuffle by a random key, stable.
    let mut keyed: Vec<(u64, Option<(usize, usize)>)> =
        kinds.into_iter().map(|k| (next(1000), k)).collect();
    keyed.sort_by_key(|e| e.0);
    for (i, (_, kind)) in keyed.iter().enumerate() {
        let a = b.activity(format!("a{i}"), 1 + next(5) as i64);
        for &res in &resources {
            if next(2) == 0 {
                b.demand(a, res, 1);
            }
        }
        for &p in &acts {
            if next(4) == 0 {
                b.precedence(p, a);
            }
        }
        if let Some((r, k)) = *kind {
            modes[r][k].push(a);
            // Sometimes shared with another mode of the region (an op a split leaves alone).
            let others = modes[r].len();
            if next(4) == 0 {
                let j = next(others as u64) as usize;
                if j != k {
                    modes[r][j].push(a);
                }
            }
        }
        acts.push(a);
    }
    let regions = modes
        .into_iter()
        .enumerate()
        .map(|(r, m)| Region {
            name: format!("region{r}"),
            modes: m,
        })
        .collect();
    ModalProblem::new(b.build().unwrap(), regions).unwrap()
}
