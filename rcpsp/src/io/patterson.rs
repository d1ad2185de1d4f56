//! Patterson `.rcp` files (Patterson, Management Science 30, 1984; the layout of the RCPLIB and
//! PSPLIB `.rcp` distributions).
//!
//! Whitespace-separated numbers, line breaks anywhere: the number of activities `n`
//! (including the dummy source and sink) and of resources `R`; the `R` capacities; then per
//! activity its duration, its `R` demands, its number of successors and their 1-based indices.
//! Activities are named by their 1-based index, resources `R1`, `R2`, ...

use super::text::Tokens;
use super::ReadError;
use crate::problem::{Problem, ProblemBuilder, Time};

/// Parses the text of a `.rcp` file; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Problem, ReadError> {
    let mut t = Tokens::new(file, text.lines().enumerate().map(|(i, l)| (i + 1, l)));
    let (n, tok) = t.number::<usize>("the number of activities")?;
    if n == 0 {
        return Err(t.error_at(tok, "a positive number of activities"));
    }
    let (r, _) = t.number::<usize>("the number of resources")?;
    // Counts come from the file: each item they count is a number of at least one byte, so
    // nothing is reserved past the text's length (a count of 10^15 is an error at the end of
    // the file, not an allocation).
    let at_most = |count: usize| count.min(text.len());
    let mut capacities = Vec::with_capacity(at_most(r));
    for k in 1..=r {
        capacities.push(
            t.number::<u32>(&format!("the capacity of resource R{k}"))?
                .0,
        );
    }
    // Per activity: duration, demands, successors.
    let mut rows: Vec<(Time, Vec<u32>, Vec<usize>)> = Vec::with_capacity(at_most(n));
    for j in 1..=n {
        let (d, _) = t.number::<Time>(&format!("the duration of activity {j}"))?;
        let mut demands = Vec::with_capacity(at_most(r));
        for k in 1..=r {
            demands.push(
                t.number::<u32>(&format!("the demand of activity {j} for R{k}"))?
                    .0,
            );
        }
        let (count, _) = t.number::<usize>(&format!("the successor count of activity {j}"))?;
        let mut successors = Vec::with_capacity(at_most(count));
        for _ in 0..count {
            let expected = format!("a successor index of activity {j} (1 to {n})");
            let (s, tok) = t.number::<usize>(&expected)?;
            if s == 0 || s > n {
                return Err(t.error_at(tok, &expected));
            }
            successors.push(s);
        }
        rows.push((d, demands, successors));
    }
    if let Some(extra) = t.peek() {
        return Err(t.error_at(extra, &format!("the end of the file after {n} activities")));
    }

    let mut b = ProblemBuilder::new();
    let resources: Vec<_> = capacities
        .iter()
        .enumerate()
        .map(|(k, &cap)| b.resource(format!("R{}", k + 1), cap))
        .collect();
    let ids: Vec<_> = rows
        .iter()
        .enumerate()
        .map(|(j, row)| b.activity((j + 1).to_string(), row.0))
        .collect();
    for (j, (_, demands, successors)) in rows.iter().enumerate() {
        for (k, &q) in demands.iter().enumerate() {
            if q > 0 {
                b.demand(ids[j], resources[k], q);
            }
        }
        for &s in successors {
            b.precedence(ids[j], ids[s - 1]);
        }
    }
    b.build().map_err(|source| ReadError::Invalid {
        file: file.to_owned(),
        source,
    })
}
