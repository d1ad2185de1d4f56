//! Large-neighbourhood search around the incumbent, with the CP model as the repair
//! ([`PumpkinConfig::lns`](super::PumpkinConfig::lns)).
//!
//! A neighbourhood is a time window `[a, a + w)` of the incumbent `S` (makespan `UB`). Every
//! activity that ends by `a` keeps its start (`s_i = S_i`), every activity that starts at
//! `a + w` or later moves one unit earlier (`s_i = S_i - 1`), and the ones in between are free.
//! The two fixed parts cannot meet (the prefix ends by `a`, the shifted suffix starts at
//! `a + w - 1 >= a`), so the neighbourhood has a schedule of makespan at most `UB - 1` exactly
//! when the free activities fit between them: the model, capped at `UB - 1`, is solved under
//! those starts as assumptions, within a small slice of conflicts. Assumptions are decisions
//! of the solver, so every nogood it learns holds for the whole model and the proof keeps it.
//! A failed assumption or a spent slice only says the neighbourhood holds no improvement.
//! Each neighbourhood frees, at random, the window alone, everything from `a` on (nothing
//! shifted), or everything before `a + w` (nothing kept).
//!
//! The window's start is uniform over `[0, UB - w]` from the search's seeded generator, and its
//! width a share of `UB` that adapts (as in the adaptive LNS of OptalCP and CP-SAT): it grows
//! when a neighbourhood is refuted without search (too small to hold an improvement) and
//! shrinks when its slice runs out (too large to repair within it), between [`MIN_WIDTH`] and
//! [`MAX_WIDTH`]. Cost per neighbourhood: `O(n)` to build it, then the slice.
//!
//! Sources: P. Shaw, "Using constraint programming and local search methods to solve vehicle
//! routing problems", CP 1998 (LNS with CP as the repair); the time-window neighbourhoods of
//! P. Laborie and D. Godard, "Self-adapting large neighborhood search: application to
//! single-mode scheduling problems", MISTA 2007; the OptalCP documentation (its workers mix
//! LNS and proof searches) and CP-SAT's (`SatParameters`: LNS workers beside the proof ones).

use concerto_rcpsp::{Problem, Schedule, Time};
use pumpkin_core::predicate;
use pumpkin_core::predicates::Predicate;
use pumpkin_core::rand::rngs::SmallRng;
use pumpkin_core::rand::{RngExt, SeedableRng};
use pumpkin_core::variables::DomainId;

use super::common::small;

/// The first window width, as a share of the incumbent's makespan.
const FIRST_WIDTH: f64 = 0.3;
/// The smallest window width (share of the makespan).
const MIN_WIDTH: f64 = 0.05;
/// The largest window width (share of the makespan): wider, nearly nothing is fixed.
const MAX_WIDTH: f64 = 0.8;
/// Growth of the width after a neighbourhood refuted without search.
const GROW: f64 = 1.2;
/// Shrinking of the width after a neighbourhood whose slice ran out.
const SHRINK: f64 = 0.85;

/// How one neighbourhood ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Repair {
    /// It held a schedule shorter than the incumbent.
    Improved,
    /// It holds none: refuted within its slice.
    Refuted,
    /// Its slice ran out.
    SliceOut,
}

/// The neighbourhood generator of one search.
pub(super) struct Lns {
    rng: SmallRng,
    /// The window's width, as a share of the incumbent's makespan.
    width: f64,
}

impl Lns {
    /// A generator seeded with `seed` (the search's own).
    pub(super) fn new(seed: u64) -> Self {
        Self {
            rng: SmallRng::seed_from_u64(seed ^ 0x4c4e_5300),
            width: FIRST_WIDTH,
        }
    }

    /// The current width share (for tests).
    #[cfg(test)]
    pub(super) fn width(&self) -> f64 {
        self.width
    }

    /// The assumptions of the next neighbourhood of `best` (see the module docs), one per
    /// fixed activity; `None` when the incumbent is too short to fix anything.
    pub(super) fn next(
        &mut self,
        problem: &Problem,
        best: &Schedule,
        starts: &[DomainId],
    ) -> Option<Vec<Predicate>> {
        let ub = best.makespan(problem);
        let (a, b) = self.window(ub)?;
        // One of three shapes: the window alone free, or everything from it on, or
        // everything up to it.
        let (a, b) = match self.rng.random_range(0..3u8) {
            0 => (a, b),
            1 => (a, ub + 1),
            _ => (0, b),
        };
        Some(
            window_fixes(problem, best, a, b)
                .into_iter()
                .map(|(i, s)| predicate![starts[i] == small(s)])
                .collect(),
        )
    }

    /// A window `[a, b)` of a makespan `ub`, at the current width; `None` for `ub < 2`.
    fn window(&mut self, ub: Time) -> Option<(Time, Time)> {
        if ub < 2 {
            return None;
        }
        let w = ((ub as f64 * self.width).round() as Time).clamp(1, ub - 1);
        let a = self.rng.random_range(0..=ub - w);
        Some((a, a + w))
    }

    /// Adapts the width to how a neighbourhood ended.
    pub(super) fn adapt(&mut self, repair: Repair) {
        self.width = match repair {
            Repair::Improved => self.width,
            Repair::Refuted => (self.width * GROW).min(MAX_WIDTH),
            Repair::SliceOut => (self.width * SHRINK).max(MIN_WIDTH),
        };
    }
}

/// The fixed activities of the window `[a, b)` of `best` and their starts: those that end by
/// `a` keep theirs, those that start at `b` or later move one unit earlier. `O(n)`.
pub(super) fn window_fixes(
    problem: &Problem,
    best: &Schedule,
    a: Time,
    b: Time,
) -> Vec<(usize, Time)> {
    problem
        .ids()
        .filter_map(|id| {
            let s = best.starts()[id.index()];
            if s >= b {
                Some((id.index(), s - 1))
            } else if s + problem.duration(id) <= a {
                Some((id.index(), s))
            } else {
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use concerto_rcpsp::{check, ProblemBuilder};

    /// A chain 0 -> 1 -> 2 on one resource, plus activity 3 beside it.
    fn problem() -> (Problem, Schedule) {
        let mut b = ProblemBuilder::new();
        let r = b.resource("r", 2);
        let x: Vec<_> = (0..4)
            .map(|i| {
                let a = b.activity(format!("a{i}"), 3);
                b.demand(a, r, 1);
                a
            })
            .collect();
        b.precedence(x[0], x[1]);
        b.precedence(x[1], x[2]);
        let p = b.build().unwrap();
        // 3 starts at 7 for nothing (it could start at 0).
        let s = Schedule::new(vec![0, 3, 6, 7]);
        check(&p, &s).unwrap();
        (p, s)
    }

    #[test]
    fn the_window_fixes_the_prefix_and_shifts_the_suffix() {
        let (p, s) = problem();
        // [4, 7): 0 ends at 3 (kept), 1 and 2 overlap it (free), 3 starts at 7 (shifted).
        assert_eq!(window_fixes(&p, &s, 4, 7), vec![(0, 0), (3, 6)]);
        // [0, 1): only starts at or after 1 are fixed, each one earlier.
        assert_eq!(window_fixes(&p, &s, 0, 1), vec![(1, 2), (2, 5), (3, 6)]);
    }

    /// Solves the model of `p` capped at `cap` with the starts of `fixes` assumed: the
    /// makespan found, or `None` when the assumptions fail.
    fn repair(p: &Problem, cap: Time, fixes: &[(usize, Time)]) -> Option<Time> {
        use pumpkin_conflict_resolvers::resolvers::ResolutionResolver;
        use pumpkin_core::results::ProblemSolution;
        use pumpkin_core::results::SatisfactionResultUnderAssumptions as R;
        use pumpkin_core::termination::Indefinite;

        let mut model = super::super::model::Model::build(
            p,
            &super::super::PumpkinConfig::default(),
            0,
            0,
            cap,
        )
        .unwrap();
        let assumptions: Vec<Predicate> = fixes
            .iter()
            .map(|&(i, s)| predicate![model.starts[i] == small(s)])
            .collect();
        let mut brancher = model.solver.default_brancher();
        let mut resolver = ResolutionResolver::default();
        let answer = model.solver.satisfy_under_assumptions(
            &mut brancher,
            &mut Indefinite,
            &mut resolver,
            &assumptions,
        );
        match answer {
            R::Satisfiable(sat) => {
                let starts: Vec<Time> = model
                    .starts
                    .iter()
                    .map(|&v| sat.solution().get_integer_value(v) as Time)
                    .collect();
                for &(i, s) in fixes {
                    assert_eq!(starts[i], s, "a fixed start moved");
                }
                Some(check(p, &Schedule::new(starts)).expect("a valid schedule"))
            }
            R::UnsatisfiableUnderAssumptions(_) => None,
            _ => panic!("the model itself has a schedule within the cap"),
        }
    }

    #[test]
    fn a_neighbourhood_is_repaired_below_the_incumbent_or_refuted() {
        let (p, s) = problem();
        // [4, 7) frees 1 and 2 between 0 (kept) and 3 (at 6): a schedule of makespan 9.
        assert_eq!(repair(&p, 9, &window_fixes(&p, &s, 4, 7)), Some(9));
        // [0, 1) leaves 0 two units before 1 (now at 2): no room for its 3.
        assert_eq!(repair(&p, 9, &window_fixes(&p, &s, 0, 1)), None);
    }

    #[test]
    fn every_window_lies_in_the_makespan_and_the_width_adapts() {
        let mut lns = Lns::new(7);
        for _ in 0..200 {
            let (a, b) = lns.window(10).unwrap();
            assert!(0 <= a && a < b && b <= 10, "[{a}, {b})");
            assert_eq!(b - a, 3);
        }
        assert_eq!(lns.window(1), None);
        lns.adapt(Repair::Refuted);
        assert!((lns.width() - FIRST_WIDTH * GROW).abs() < 1e-12);
        for _ in 0..100 {
            lns.adapt(Repair::Refuted);
        }
        assert_eq!(lns.width(), MAX_WIDTH);
        for _ in 0..100 {
            lns.adapt(Repair::SliceOut);
        }
        assert_eq!(lns.width(), MIN_WIDTH);
        lns.adapt(Repair::Improved);
        assert_eq!(lns.width(), MIN_WIDTH);
    }
}
