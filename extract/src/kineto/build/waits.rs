//! A step's dependencies: FIFO order on compute streams, and the cross-stream waits, exact
//! when the trace records them and inferred from `cudaStreamWaitEvent` calls otherwise.

use std::collections::{BTreeMap, BTreeSet};

use super::super::classify::short_name;
use super::super::events::{Call, GpuOp, Ns, Trace};
use super::super::WaitCounts;
use super::Lanes;

/// A consumer that starts this long after everything its inferred producer, its stream and its
/// launch explain is taken to wait for another stream (see `infer_waits`).
const UNEXPLAINED_NS: Ns = 50_000;

/// Each op's predecessors: FIFO on compute streams, then the cross-stream waits, exact when the
/// trace records them and inferred otherwise.
pub(super) fn dependencies(
    trace: &Trace,
    ops: &[&GpuOp],
    lts: &[Ns],
    calls: &[Option<&Call>],
    lanes: &Lanes,
    warnings: &mut Vec<String>,
) -> (Vec<BTreeSet<usize>>, WaitCounts) {
    let n = ops.len();
    let (by_stream, lane_of) = (&lanes.by_stream, &lanes.lane_of);
    let mut preds: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    for v in by_stream.values() {
        if lane_of[&ops[v[0]].stream].0 {
            continue;
        }
        for w in v.windows(2) {
            preds[w[1]].insert(w[0]);
        }
    }
    let mut counts = WaitCounts::default();
    let end = |i: usize| ops[i].start + ops[i].dur;
    // Position in its CUDA stream, and the stream's ops in launch (= start) order.
    let mut at = vec![0usize; n];
    for v in by_stream.values() {
        for (k, &i) in v.iter().enumerate() {
            at[i] = k;
        }
    }
    // A wait of consumer `c` on producer `p`: on a channel (no FIFO dependencies), every op of
    // the producer's stream up to `p` not yet covered by an earlier wait of `c`'s stream.
    let mut covered: BTreeMap<(i64, i64), usize> = BTreeMap::new();
    let mut add_wait = |preds: &mut Vec<BTreeSet<usize>>, p: usize, c: usize| {
        let (ps, cs) = (ops[p].stream, ops[c].stream);
        if lane_of[&ps].0 {
            let v = &by_stream[&ps];
            let from = covered.get(&(cs, ps)).map_or(0, |&k| k + 1);
            for &q in v.iter().take(at[p] + 1).skip(from) {
                if end(q) <= ops[c].start {
                    preds[c].insert(q);
                }
            }
            let k = covered.entry((cs, ps)).or_insert(0);
            *k = (*k).max(at[p]);
        } else {
            preds[c].insert(p);
        }
    };
    // A launch's first op (ops are in start order): the one a wait before the launch holds.
    let mut index_of: BTreeMap<i64, usize> = BTreeMap::new();
    for (i, g) in ops.iter().enumerate() {
        index_of.entry(g.correlation).or_insert(i);
    }
    if !trace.waits.is_empty() {
        exact_waits(trace, ops, lts, &mut counts, warnings, &mut |p, c| {
            add_wait(&mut preds, p, c)
        });
    } else {
        infer_waits(
            trace,
            ops,
            lts,
            calls,
            &index_of,
            &mut counts,
            &mut |p, c| add_wait(&mut preds, p, c),
        );
    }
    (preds, counts)
}

/// The waits the trace records: which stream waited for which stream's event.
fn exact_waits(
    trace: &Trace,
    ops: &[&GpuOp],
    lts: &[Ns],
    counts: &mut WaitCounts,
    warnings: &mut Vec<String>,
    add: &mut dyn FnMut(usize, usize),
) {
    let n = ops.len();
    let end = |i: usize| ops[i].start + ops[i].dur;
    let call_ts: BTreeMap<i64, Ns> = trace.calls.iter().map(|c| (c.correlation, c.ts)).collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (lts[i], ops[i].correlation));
    for w in &trace.waits {
        let (Some(&rec), Some(&wts)) = (call_ts.get(&w.record), call_ts.get(&w.correlation)) else {
            counts.outside += 1;
            continue;
        };
        let producer = order
            .iter()
            .rev()
            .find(|&&i| ops[i].stream == w.wait_on_stream && lts[i] <= rec)
            .copied();
        let consumer = order
            .iter()
            .find(|&&i| ops[i].stream == w.stream && lts[i] >= wts)
            .copied();
        match (producer, consumer) {
            (Some(p), Some(c)) if end(p) <= ops[c].start => {
                add(p, c);
                counts.exact += 1;
            }
            (Some(p), Some(c)) => {
                counts.dropped += 1;
                warnings.push(format!(
                    "event {}: `{}` waits for `{}`, which ended {} ns after it started; \
                     the wait is left out",
                    w.index,
                    short_name(&ops[c].name),
                    short_name(&ops[p].name),
                    end(p) - ops[c].start
                ));
            }
            _ => counts.outside += 1,
        }
    }
}

/// Cross-stream waits from `cudaStreamWaitEvent` calls, for traces without `cuda_sync` events:
/// on each CPU thread, a wait applies to the next op that thread launches (the consumer); the
/// producer is the op launched last on another stream before the thread's latest
/// `cudaEventRecord` (before the wait itself when records are not traced). A producer that
/// ended after the consumer started cannot be the one (the measured step says so): the latest
/// earlier op of the same stream that ended in time is taken instead (`moved`), or the wait is
/// left out (`dropped`). A consumer that started more than [`UNEXPLAINED_NS`] after its
/// producer, its stream predecessor and its launch (+ the same margin) all allow waited for
/// something else: the op of another stream that ended last before it started is taken
/// (`moved`).
fn infer_waits(
    trace: &Trace,
    ops: &[&GpuOp],
    lts: &[Ns],
    calls: &[Option<&Call>],
    index_of: &BTreeMap<i64, usize>,
    counts: &mut WaitCounts,
    add: &mut dyn FnMut(usize, usize),
) {
    let n = ops.len();
    let end = |i: usize| ops[i].start + ops[i].dur;
    // Every op of the step by launch time, to find "the last launch on another stream".
    let mut by_launch: Vec<usize> = (0..n).collect();
    by_launch.sort_by_key(|&i| (lts[i], ops[i].correlation));
    let launch_ts: Vec<Ns> = by_launch.iter().map(|&i| lts[i]).collect();
    // The end of each op's predecessor on its stream (ops are in start order).
    let mut prev_end = vec![Ns::MIN; n];
    let mut last_on: BTreeMap<i64, usize> = BTreeMap::new();
    for i in 0..n {
        if let Some(&p) = last_on.get(&ops[i].stream) {
            prev_end[i] = end(p);
        }
        last_on.insert(ops[i].stream, i);
    }
    // The launch calls' span (ops without one started at their `lts`, after it).
    let launched = || (0..n).filter(|&i| calls[i].is_some()).map(|i| lts[i]);
    let lo = launched().min().unwrap_or(0);
    let hi = launched().max().unwrap_or(0);
    // Threads by `(pid, tid)`, the order the waits are applied in.
    let mut threads: BTreeMap<&(String, String), Vec<&Call>> = BTreeMap::new();
    for c in &trace.calls {
        if c.ts >= lo && c.ts <= hi {
            let name = &trace.thread_names[c.thread as usize];
            threads.entry(name).or_default().push(c);
        }
    }
    for calls in threads.values_mut() {
        calls.sort_by_key(|c| (c.ts, c.correlation));
        let mut record: Option<Ns> = None;
        let mut pending: Vec<Ns> = Vec::new();
        for c in calls.iter() {
            if &*c.name == "cudaEventRecord" {
                record = Some(c.ts);
            } else if &*c.name == "cudaStreamWaitEvent" {
                pending.push(record.unwrap_or(c.ts).min(c.ts));
            } else if let Some(&i) = index_of.get(&c.correlation) {
                for cut in pending.drain(..) {
                    let upto = launch_ts.partition_point(|&t| t <= cut);
                    let before = &by_launch[..upto];
                    // The latest op of `stream` launched before the cut that ended in time.
                    let in_time = |stream: i64| {
                        before
                            .iter()
                            .rev()
                            .find(|&&j| ops[j].stream == stream && end(j) <= ops[i].start)
                            .copied()
                    };
                    let Some(last) = before
                        .iter()
                        .rev()
                        .find(|&&j| ops[j].stream != ops[i].stream)
                        .copied()
                    else {
                        counts.outside += 1;
                        continue;
                    };
                    let chosen = in_time(ops[last].stream);
                    // A consumer that started long after everything the chosen producer, its
                    // stream and its launch explain waited for another stream's op: the one
                    // of another stream that ended last before it started.
                    let explained = chosen
                        .map_or(Ns::MIN, end)
                        .max(prev_end[i])
                        .max(lts[i].saturating_add(UNEXPLAINED_NS));
                    let better = if ops[i].start > explained.saturating_add(UNEXPLAINED_NS) {
                        let mut streams: Vec<i64> = before
                            .iter()
                            .map(|&j| ops[j].stream)
                            .filter(|&s| s != ops[i].stream)
                            .collect();
                        streams.sort_unstable();
                        streams.dedup();
                        streams
                            .into_iter()
                            .filter_map(in_time)
                            .max_by_key(|&j| (end(j), std::cmp::Reverse(j)))
                            .filter(|&j| chosen.is_none_or(|c| end(j) > end(c)))
                    } else {
                        None
                    };
                    match (chosen, better) {
                        (_, Some(q)) => {
                            add(q, i);
                            counts.moved += 1;
                        }
                        (Some(p), None) if p == last => {
                            add(p, i);
                            counts.inferred += 1;
                        }
                        (Some(p), None) => {
                            add(p, i);
                            counts.moved += 1;
                        }
                        (None, None) => counts.dropped += 1,
                    }
                }
            }
        }
    }
}
