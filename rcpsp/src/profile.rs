//! Resource profiles: how much of every resource is in use over time, for schedule-generation
//! schemes.
//!
//! Two representations with the same interface:
//! - [`TimeIndexed`]: free capacity per resource per time unit. Finding the earliest fit of an
//!   activity of duration `d` scans `O(d)` cells per attempt and jumps past the latest
//!   conflict. Best for short horizons (PSPLIB: a few hundred units).
//! - [`Steps`]: per resource a step function in an ordered map (time -> usage from then on).
//!   Cost per attempt `O(log s + k)` for `s` steps and `k` steps inside the window, whatever
//!   the durations are. Needed for nanosecond-scale DL graphs.
//!
//! - [`Gaps`]: for problems whose resources all have capacity 1 (the streams of a DL graph),
//!   the free intervals of each resource, also indexed by length class (`floor(log2 length)`):
//!   the earliest gap of length `d` after `t` is found with one lookup per class above `d`'s
//!   and a scan of `d`'s own class, instead of walking every busy segment after `t` (which made
//!   the step profile quadratic on a long, densely packed stream).
//!
//! [`AnyProfile::for_problem`] picks one from the horizon, the mean duration and the
//! capacities.

use std::collections::{BTreeMap, BTreeSet};

use crate::problem::{Problem, ResourceId, Time};

/// The operations a schedule-generation scheme needs.
pub(crate) trait Profile {
    /// Forget every activity added.
    fn clear(&mut self);
    /// The earliest `t >= from` such that all `loads` fit during `[t, t + duration)`.
    fn earliest_fit(&self, loads: &[(ResourceId, u32)], duration: Time, from: Time) -> Time;
    /// Whether all `loads` fit during `[t, t + duration)`.
    fn fits(&self, loads: &[(ResourceId, u32)], duration: Time, t: Time) -> bool;
    /// Occupies `loads` during `[start, start + duration)`.
    fn add(&mut self, loads: &[(ResourceId, u32)], start: Time, duration: Time);
    /// Free capacity of `r` at time point `t`.
    fn free_at(&self, r: ResourceId, t: Time) -> u32;
}

/// Free capacity per resource and time unit, stored row by resource.
#[derive(Clone, Debug)]
pub(crate) struct TimeIndexed {
    caps: Vec<u32>,
    len: usize,
    free: Vec<u32>,
    /// Cells at or after `used` in every row are untouched (all free).
    used: usize,
}

impl TimeIndexed {
    pub(crate) fn new(caps: Vec<u32>, horizon: Time) -> Self {
        let len = usize::try_from(horizon.max(1)).expect("horizon checked by the caller") + 1;
        let mut free = Vec::with_capacity(caps.len() * len);
        for &c in &caps {
            free.extend(std::iter::repeat_n(c, len));
        }
        Self {
            caps,
            len,
            free,
            used: 0,
        }
    }

    fn grow(&mut self, needed: usize) {
        let new_len = needed.max(self.len * 2);
        let mut free = Vec::with_capacity(self.caps.len() * new_len);
        for (r, &c) in self.caps.iter().enumerate() {
            free.extend_from_slice(&self.free[r * self.len..(r + 1) * self.len]);
            free.extend(std::iter::repeat_n(c, new_len - self.len));
        }
        self.free = free;
        self.len = new_len;
    }

    #[inline]
    fn row(&self, r: ResourceId) -> &[u32] {
        &self.free[r.0 * self.len..(r.0 + 1) * self.len]
    }
}

impl Profile for TimeIndexed {
    fn clear(&mut self) {
        let used = self.used.min(self.len);
        for (r, &c) in self.caps.iter().enumerate() {
            self.free[r * self.len..r * self.len + used].fill(c);
        }
        self.used = 0;
    }

    fn earliest_fit(&self, loads: &[(ResourceId, u32)], duration: Time, from: Time) -> Time {
        let mut t = from.max(0) as usize;
        let d = duration as usize;
        'attempt: loop {
            // Beyond `used` every cell is free, so only the part of the window below it can
            // conflict.
            let end = (t + d).min(self.used);
            if end > t {
                for &(r, need) in loads {
                    let row = self.row(r);
                    let mut tau = end;
                    while tau > t {
                        tau -= 1;
                        if row[tau] < need {
                            t = tau + 1;
                            continue 'attempt;
                        }
                    }
                }
            }
            return t as Time;
        }
    }

    fn fits(&self, loads: &[(ResourceId, u32)], duration: Time, t: Time) -> bool {
        let t = t.max(0) as usize;
        let end = (t + duration as usize).min(self.used);
        end <= t
            || loads
                .iter()
                .all(|&(r, need)| self.row(r)[t..end].iter().all(|&f| f >= need))
    }

    fn add(&mut self, loads: &[(ResourceId, u32)], start: Time, duration: Time) {
        if loads.is_empty() || duration == 0 {
            return;
        }
        let s = start as usize;
        let e = s + duration as usize;
        if e > self.len {
            self.grow(e);
        }
        for &(r, need) in loads {
            let base = r.0 * self.len;
            for cell in &mut self.free[base + s..base + e] {
                debug_assert!(*cell >= need, "profile overload");
                *cell -= need;
            }
        }
        self.used = self.used.max(e);
    }

    fn free_at(&self, r: ResourceId, t: Time) -> u32 {
        let t = t.max(0) as usize;
        if t < self.used {
            self.row(r)[t]
        } else {
            self.caps[r.0]
        }
    }
}

/// Per resource a step function: `usage[r][t]` holds from key `t` until the next key; no key
/// means usage 0. The last key of a non-empty map always has usage 0.
#[derive(Clone, Debug)]
pub(crate) struct Steps {
    caps: Vec<u32>,
    usage: Vec<BTreeMap<Time, u32>>,
}

impl Steps {
    pub(crate) fn new(caps: Vec<u32>) -> Self {
        let usage = vec![BTreeMap::new(); caps.len()];
        Self { caps, usage }
    }

    /// End of the last segment overlapping `[t, t + duration)` whose usage exceeds `limit`,
    /// if any.
    fn last_conflict_end(
        map: &BTreeMap<Time, u32>,
        limit: u32,
        t: Time,
        duration: Time,
    ) -> Option<Time> {
        let end = t + duration;
        let first = map.range(..=t).next_back().map_or(t, |(&k, _)| k);
        let mut iter = map.range(first..).peekable();
        let mut conflict_end = None;
        while let Some((&k, &u)) = iter.next() {
            if k >= end {
                break;
            }
            if u > limit {
                conflict_end = Some(iter.peek().map_or(Time::MAX, |(&next, _)| next));
            }
        }
        conflict_end
    }

    /// Makes sure a key exists at `t`, copying the usage of the segment containing it.
    fn split(map: &mut BTreeMap<Time, u32>, t: Time) {
        if !map.contains_key(&t) {
            let u = map.range(..t).next_back().map_or(0, |(_, &u)| u);
            map.insert(t, u);
        }
    }
}

impl Profile for Steps {
    fn clear(&mut self) {
        for m in &mut self.usage {
            m.clear();
        }
    }

    fn earliest_fit(&self, loads: &[(ResourceId, u32)], duration: Time, from: Time) -> Time {
        let mut t = from;
        if duration == 0 {
            return t;
        }
        'attempt: loop {
            for &(r, need) in loads {
                let limit = self.caps[r.0] - need;
                if let Some(e) = Self::last_conflict_end(&self.usage[r.0], limit, t, duration) {
                    t = e;
                    continue 'attempt;
                }
            }
            return t;
        }
    }

    fn fits(&self, loads: &[(ResourceId, u32)], duration: Time, t: Time) -> bool {
        duration == 0
            || loads.iter().all(|&(r, need)| {
                Self::last_conflict_end(&self.usage[r.0], self.caps[r.0] - need, t, duration)
                    .is_none()
            })
    }

    fn add(&mut self, loads: &[(ResourceId, u32)], start: Time, duration: Time) {
        if duration == 0 {
            return;
        }
        let end = start + duration;
        for &(r, need) in loads {
            let map = &mut self.usage[r.0];
            Self::split(map, start);
            Self::split(map, end);
            for (_, u) in map.range_mut(start..end) {
                *u += need;
            }
        }
    }

    fn free_at(&self, r: ResourceId, t: Time) -> u32 {
        let used = self.usage[r.0]
            .range(..=t)
            .next_back()
            .map_or(0, |(_, &u)| u);
        self.caps[r.0] - used
    }
}

/// Free intervals of unit-capacity resources (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct Gaps {
    /// Per resource: free interval start -> end (`Time::MAX` for the last, open one).
    free: Vec<BTreeMap<Time, Time>>,
    /// Per resource and length class: the starts of the free intervals of that class.
    classes: Vec<Vec<BTreeSet<Time>>>,
}

/// Length classes: `floor(log2 length)` for lengths up to 2^62, the open interval in the last.
const CLASSES: usize = 64;

fn class(length: Time) -> usize {
    if length == Time::MAX {
        CLASSES - 1
    } else {
        (63 - (length.max(1) as u64).leading_zeros()) as usize
    }
}

impl Gaps {
    pub(crate) fn new(resources: usize) -> Self {
        let mut g = Self {
            free: vec![BTreeMap::new(); resources],
            classes: vec![vec![BTreeSet::new(); CLASSES]; resources],
        };
        g.clear();
        g
    }

    fn insert(&mut self, r: usize, start: Time, end: Time) {
        if end > start {
            self.free[r].insert(start, end);
            let length = if end == Time::MAX {
                Time::MAX
            } else {
                end - start
            };
            self.classes[r][class(length)].insert(start);
        }
    }

    fn delete(&mut self, r: usize, start: Time) -> Time {
        let end = self.free[r]
            .remove(&start)
            .expect("a free interval starts here");
        let length = if end == Time::MAX {
            Time::MAX
        } else {
            end - start
        };
        self.classes[r][class(length)].remove(&start);
        end
    }

    /// The earliest `t >= from` such that `[t, t + duration)` is free on resource `r`.
    fn fit(&self, r: usize, duration: Time, from: Time) -> Time {
        let free = &self.free[r];
        // The free interval containing `from`, if any.
        if let Some((&s, &e)) = free.range(..=from).next_back() {
            if e > from && (e == Time::MAX || e - from >= duration) {
                return from.max(s);
            }
        }
        // Otherwise the first interval starting after `from` that is long enough: any of a
        // higher class is; in `duration`'s own class, some are.
        let own = class(duration);
        let mut best = Time::MAX;
        for set in &self.classes[r][own + 1..] {
            if let Some(&s) = set.range(from + 1..).next() {
                best = best.min(s);
            }
        }
        for &s in self.classes[r][own].range(from + 1..best) {
            let e = free[&s];
            if e == Time::MAX || e - s >= duration {
                best = s;
                break;
            }
        }
        best
    }
}

impl Profile for Gaps {
    fn clear(&mut self) {
        for r in 0..self.free.len() {
            self.free[r].clear();
            for c in &mut self.classes[r] {
                c.clear();
            }
            self.insert(r, Time::MIN / 4, Time::MAX);
        }
    }

    fn earliest_fit(&self, loads: &[(ResourceId, u32)], duration: Time, from: Time) -> Time {
        if duration == 0 {
            return from;
        }
        let mut t = from;
        loop {
            let mut moved = false;
            for &(r, _) in loads {
                let f = self.fit(r.0, duration, t);
                if f > t {
                    t = f;
                    moved = true;
                }
            }
            if !moved {
                return t;
            }
        }
    }

    fn fits(&self, loads: &[(ResourceId, u32)], duration: Time, t: Time) -> bool {
        duration == 0 || loads.iter().all(|&(r, _)| self.fit(r.0, duration, t) == t)
    }

    fn add(&mut self, loads: &[(ResourceId, u32)], start: Time, duration: Time) {
        if duration == 0 {
            return;
        }
        let end = start + duration;
        for &(r, _) in loads {
            let (&s, _) = self.free[r.0]
                .range(..=start)
                .next_back()
                .expect("the interval is free");
            let e = self.delete(r.0, s);
            debug_assert!(e >= end, "profile overload");
            self.insert(r.0, s, start);
            self.insert(r.0, end, e);
        }
    }

    fn free_at(&self, r: ResourceId, t: Time) -> u32 {
        let free = self.free[r.0]
            .range(..=t)
            .next_back()
            .is_some_and(|(_, &e)| e > t);
        u32::from(free)
    }
}

/// The profile a problem gets: time-indexed for short horizons with short activities,
/// free intervals when every resource has capacity 1, step functions otherwise.
#[derive(Clone, Debug)]
pub(crate) enum AnyProfile {
    Indexed(TimeIndexed),
    Steps(Steps),
    Gaps(Gaps),
}

/// Largest number of time-indexed cells (resources x horizon) before switching to steps.
const MAX_CELLS: i128 = 1 << 22;
/// Largest mean duration of a busy activity for the time-indexed profile: its cost grows with
/// the duration, the step profile's does not.
const MAX_MEAN_DURATION: i128 = 64;

impl AnyProfile {
    pub(crate) fn for_problem(problem: &Problem) -> Self {
        let caps: Vec<u32> = problem.resources().iter().map(|r| r.capacity).collect();
        let cells = i128::from(problem.horizon()) * (caps.len().max(1) as i128);
        let busy: Vec<Time> = problem
            .activities()
            .iter()
            .filter(|a| a.duration > 0)
            .map(|a| a.duration)
            .collect();
        let mean = if busy.is_empty() {
            0
        } else {
            busy.iter().map(|&d| i128::from(d)).sum::<i128>() / busy.len() as i128
        };
        if cells <= MAX_CELLS && mean <= MAX_MEAN_DURATION {
            AnyProfile::Indexed(TimeIndexed::new(caps, problem.horizon()))
        } else if caps.iter().all(|&c| c == 1) {
            AnyProfile::Gaps(Gaps::new(caps.len()))
        } else {
            AnyProfile::Steps(Steps::new(caps))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exercise(p: &mut dyn Profile) {
        let r0 = ResourceId(0);
        let r1 = ResourceId(1);
        // capacity 2 on r0, 1 on r1.
        p.add(&[(r0, 2)], 2, 3); // r0 full in [2, 5)
        assert_eq!(p.earliest_fit(&[(r0, 1)], 2, 0), 0);
        assert_eq!(p.earliest_fit(&[(r0, 1)], 3, 0), 5);
        assert!(!p.fits(&[(r0, 1)], 3, 0));
        assert!(p.fits(&[(r0, 1)], 2, 0));
        p.add(&[(r1, 1)], 5, 4); // r1 full in [5, 9)
        assert_eq!(p.earliest_fit(&[(r0, 1), (r1, 1)], 2, 1), 9);
        assert_eq!(p.earliest_fit(&[(r1, 1)], 5, 0), 0);
        assert_eq!(p.earliest_fit(&[(r1, 1)], 6, 0), 9);
        assert_eq!(p.earliest_fit(&[], 5, 3), 3);
        p.add(&[(r0, 1)], 0, 2);
        assert_eq!(p.earliest_fit(&[(r0, 2)], 1, 0), 5);
        p.clear();
        assert_eq!(p.earliest_fit(&[(r0, 2), (r1, 1)], 7, 0), 0);
    }

    #[test]
    fn time_indexed_and_steps_agree() {
        exercise(&mut TimeIndexed::new(vec![2, 1], 4));
        exercise(&mut Steps::new(vec![2, 1]));
    }

    #[test]
    fn gaps_agree_with_steps_on_unit_resources() {
        // Random placements on two unit resources: every query answered the same way.
        let mut seed: u64 = 7;
        let mut next = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        let mut gaps = Gaps::new(2);
        let mut steps = Steps::new(vec![1, 1]);
        for _ in 0..400 {
            let r = ResourceId(next(2) as usize);
            let both = next(5) == 0;
            let loads: Vec<(ResourceId, u32)> = if both {
                vec![(ResourceId(0), 1), (ResourceId(1), 1)]
            } else {
                vec![(r, 1)]
            };
            let d = 1 + next(40) as Time;
            let from = next(3000) as Time;
            let t = steps.earliest_fit(&loads, d, from);
            assert_eq!(gaps.earliest_fit(&loads, d, from), t, "d {d} from {from}");
            assert_eq!(gaps.fits(&loads, d, from), steps.fits(&loads, d, from));
            steps.add(&loads, t, d);
            gaps.add(&loads, t, d);
        }
    }
}
