//! Criterion bench of the schedule-generation schemes: serial and parallel SGS and
//! justification, on PSPLIB fixtures (time-indexed resource profile) and on a generated
//! 2000-activity instance with nanosecond durations (step-function profile).
//!
//! Run: `cargo bench -p concerto-benches --bench sgs`.

use std::hint::black_box;

use concerto_rcpsp::priority::{list_from_priorities, priorities, Rule};
use concerto_rcpsp::sgs::{ActivityList, Decoder};
use concerto_rcpsp::{justify, read_problem, Problem, ProblemBuilder};
use criterion::{criterion_main, BenchmarkId, Criterion};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A layered DAG: `layers` layers of `width` activities on three unit resources, durations in
/// nanoseconds (1 to 100 us), each activity depending on 1-3 activities of the layer before.
fn layered(layers: usize, width: usize, seed: u64) -> Problem {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut b = ProblemBuilder::new();
    let res = [
        b.resource("compute", 1),
        b.resource("intra", 1),
        b.resource("inter", 1),
    ];
    let mut prev: Vec<_> = Vec::new();
    for l in 0..layers {
        let mut cur = Vec::with_capacity(width);
        for w in 0..width {
            let a = b.activity(format!("op{l}_{w}"), rng.random_range(1_000..100_000));
            b.demand(a, res[rng.random_range(0..3)], 1);
            for _ in 0..rng.random_range(1..=3usize).min(prev.len()) {
                b.precedence(prev[rng.random_range(0..prev.len())], a);
            }
            cur.push(a);
        }
        prev = cur;
    }
    b.build().expect("a layered DAG is valid")
}

fn instances() -> Vec<(String, Problem)> {
    let mut v: Vec<(String, Problem)> = ["psplib/j30/j3013_1.sm", "psplib/j60/j605_2.sm"]
        .iter()
        .map(|name| {
            let p = read_problem(concerto_fixtures::path(name)).expect("fixture parses");
            (name.rsplit('/').next().unwrap_or(name).to_string(), p)
        })
        .collect();
    v.push(("layered_2000".into(), layered(200, 10, 1)));
    v
}

fn schemes(c: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    for (name, problem) in instances() {
        let lft = priorities(&problem, Rule::Lft, &mut rng);
        let list = ActivityList::new(&problem, list_from_priorities(&problem, &lft))
            .expect("rule lists are feasible");
        let mut decoder = Decoder::new(&problem);
        let mut group = c.benchmark_group(format!("sgs/{name}"));
        group.bench_function(BenchmarkId::new("serial", problem.len()), |b| {
            b.iter(|| black_box(decoder.decode(black_box(&list))))
        });
        group.bench_function(BenchmarkId::new("parallel", problem.len()), |b| {
            b.iter(|| black_box(decoder.decode_parallel(black_box(&lft))))
        });
        decoder.decode(&list);
        let schedule = decoder.schedule();
        group.bench_function(BenchmarkId::new("justify", problem.len()), |b| {
            b.iter(|| black_box(justify(&problem, black_box(&schedule))))
        });
        group.finish();
    }
}

mod group {
    // `criterion_group!` expands to an undocumented public function.
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::schemes);
}
criterion_main!(group::benches);
