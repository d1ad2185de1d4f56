//! The driver's state: the order by start time, its schedule, and the latest starts that keep
//! the makespan; and how a pass's window answers are combined into it.

use std::time::Duration;

use crate::problem::{ActivityId, Problem, Time};
use crate::sgs::Decoder;

/// The order by start time, each activity's position in it, its schedule, and the latest
/// starts that keep the makespan.
pub(super) struct State<'p> {
    pub(super) order: Vec<ActivityId>,
    pub(super) position: Vec<usize>,
    pub(super) rank: Vec<usize>,
    pub(super) decoder: Decoder<'p>,
    pub(super) makespan: Time,
    /// Without time windows: the order right-justified (serial SGS on the reversed problem,
    /// by decreasing finish) and shifted to end at the makespan; with time windows: the starts.
    pub(super) latest: Vec<Time>,
    pub(super) reversed: Option<Problem>,
    /// How long the last pass took to combine, decode and refresh (at least 50 ms).
    pub(super) finishing: Duration,
}

impl<'p> State<'p> {
    /// The state whose order sorts `starts` (a valid schedule).
    pub(super) fn new(problem: &'p Problem, starts: &[Time]) -> Self {
        let mut rank = vec![0; problem.len()];
        for (k, a) in problem.topological_order().iter().enumerate() {
            rank[a.index()] = k;
        }
        let mut state = Self {
            order: Vec::new(),
            position: vec![0; problem.len()],
            rank,
            decoder: Decoder::new(problem),
            makespan: 0,
            latest: Vec::new(),
            reversed: (!problem.has_time_windows()).then(|| problem.reversed()),
            finishing: Duration::from_millis(50),
        };
        state.order = state.sorted(problem, starts);
        state.makespan = state.decoder.serial(&state.order);
        state.refresh(problem);
        state
    }

    /// The activities by start, then finish, then topological rank, always
    /// precedence-feasible: windows solved side by side can move a predecessor later and its
    /// successor earlier, so combined start times are taken as priorities of a topological
    /// sort. For a valid schedule this is its start order, whose serial SGS starts no activity
    /// later.
    fn sorted(&self, problem: &Problem, starts: &[Time]) -> Vec<ActivityId> {
        let mut ranked: Vec<usize> = (0..problem.len()).collect();
        ranked.sort_unstable_by_key(|&k| {
            let s = starts[k];
            (s, s + problem.duration(ActivityId(k)), self.rank[k])
        });
        let mut priority = vec![0i64; ranked.len()];
        for (p, &k) in ranked.iter().enumerate() {
            priority[k] = p as i64;
        }
        crate::priority::list_from_priorities(problem, &priority)
    }

    /// Recomputes positions and latest starts after the schedule changed.
    fn refresh(&mut self, problem: &Problem) {
        for (k, a) in self.order.iter().enumerate() {
            self.position[a.index()] = k;
        }
        let starts = self.decoder.starts();
        let Some(reversed) = &self.reversed else {
            self.latest = starts.to_vec();
            return;
        };
        let mut list: Vec<ActivityId> = problem.ids().collect();
        let rank = &self.rank;
        list.sort_unstable_by_key(|a| {
            let s = starts[a.index()];
            (
                std::cmp::Reverse(s + problem.duration(*a)),
                std::cmp::Reverse(s),
                std::cmp::Reverse(rank[a.index()]),
            )
        });
        let mut backward = Decoder::new(reversed);
        backward.serial(&list);
        self.latest = problem
            .ids()
            .map(|a| self.makespan - backward.starts()[a.index()] - problem.duration(a))
            .collect();
    }

    /// Applies the windows' new starts together if the makespan does not get worse and
    /// `admission` (if any) admits the result, else halves of them (up to `depth` levels);
    /// returns how many windows were kept.
    pub(super) fn apply(
        &mut self,
        problem: &'p Problem,
        moves: &[Vec<(ActivityId, Time)>],
        depth: usize,
        admission: Option<&dyn super::Admission>,
    ) -> usize {
        if moves.is_empty() {
            return 0;
        }
        let mut starts = self.decoder.starts().to_vec();
        for m in moves {
            for &(a, t) in m {
                starts[a.index()] = t;
            }
        }
        let candidate = self.sorted(problem, &starts);
        let makespan = self.decoder.serial(&candidate);
        if makespan <= self.makespan {
            // Sorting by the decoded schedule and decoding again starts nothing later.
            let decoded = self.decoder.starts().to_vec();
            let order = self.sorted(problem, &decoded);
            let makespan = self.decoder.serial(&order);
            if admission.is_none_or(|a| a.admits(self.decoder.starts())) {
                self.order = order;
                self.makespan = makespan;
                self.refresh(problem);
                return moves.len();
            }
        }
        // Restore the decoder's schedule of the current order.
        self.decoder.serial(&self.order);
        if depth == 0 || moves.len() == 1 {
            return 0;
        }
        let (first, second) = moves.split_at(moves.len() / 2);
        self.apply(problem, first, depth - 1, admission)
            + self.apply(problem, second, depth - 1, admission)
    }
}
