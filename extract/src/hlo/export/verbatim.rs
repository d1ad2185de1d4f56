//! The module's own text, kept byte for byte: where each entry instruction's text lies, and the
//! one backend-config field the written sequence changes (`is_sync` of an async collective).
//!
//! A compiled module (XLA's after-optimizations module: fusions, async pairs, backend configs,
//! metadata) is written back as it was read, except for the entry computation's instruction
//! order. [`EntryText`] finds, for every entry instruction, its source text (from its first
//! token, `ROOT` or its name, to the next instruction's, trailing whitespace trimmed; the last
//! one to the `}` that closes the body, found by a scan that balances brackets and skips
//! strings), so the writer can copy an instruction it does not change.
//!
//! # `is_sync`
//!
//! XLA's GPU backend runs an async collective whose start carries
//! `backend_config={..."collective_backend_config":{"is_sync":true...}}` on the compute stream,
//! synchronously, at the start's place: it overlaps nothing. XLA sets the flag after it
//! schedules (`GpuConvertAsyncCollectivesToSync`, in `xla/service/gpu/transforms/`, with
//! `is_nop` = `parameter`, `constant`, `bitcast`, `get-tuple-element`): walking the sequence,
//! a done whose start is still "in flight" makes the pair sync, and any instruction that is
//! neither a nop nor an async collective start or done clears the in-flight set (and so makes
//! every pair open across it async). [`sync_starts`] applies the same rule to the written
//! sequence, so a pair the plan overlaps with work is written `is_sync=false` (a start XLA had
//! made sync and the plan hoists becomes async) and a pair with nothing between is
//! `is_sync=true`, as XLA would have written it; only the start's flag is changed, as XLA's
//! pass does, and nothing else on its line.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::hlo::ast::{Instruction, Module, Pos};

/// The source text of a module's entry computation, instruction by instruction.
pub(super) struct EntryText<'s> {
    text: &'s str,
    /// Byte offset of the line that opens the entry (`ENTRY %main ... {`).
    head: usize,
    /// Byte offset of the line of the first instruction.
    body: usize,
    /// Byte offset of the line of the `}` that closes the entry.
    close: usize,
    /// Each entry instruction's text (`ROOT %x = ...` through its last attribute), by name.
    spans: BTreeMap<String, (Range<usize>, &'s str)>,
}

impl<'s> EntryText<'s> {
    /// The entry's text in `text`, which `module` was parsed from; `None` when the layout is
    /// not one instruction after another on lines of their own (then the writer writes every
    /// instruction itself). O(text).
    pub(super) fn new(text: &'s str, module: &Module) -> Option<Self> {
        let lines = line_starts(text);
        let entry = module.entry();
        let offset = |p: Pos| offset(text, &lines, p);
        let head = lines.get(entry.pos.line.checked_sub(1)?).copied()?;
        let first = entry.instructions.first()?;
        let body = lines.get(first.pos.line.checked_sub(1)?).copied()?;
        if body <= head {
            return None;
        }
        let mut spans = BTreeMap::new();
        let starts: Vec<usize> = entry
            .instructions
            .iter()
            .map(|i| offset(i.pos))
            .collect::<Option<_>>()?;
        let last = *starts.last()?;
        let close_brace = closing_brace(text, last)?;
        let close = text[..close_brace].rfind('\n').map_or(0, |n| n + 1);
        if !text[close..close_brace].trim().is_empty() {
            return None;
        }
        for (k, i) in entry.instructions.iter().enumerate() {
            let start = starts[k];
            let end = starts.get(k + 1).copied().unwrap_or(close_brace);
            if end < start {
                return None;
            }
            let line_start = text[..start].rfind('\n').map_or(0, |n| n + 1);
            let indent = &text[line_start..start];
            if !indent.trim().is_empty() || !starts_with_name(&text[start..end], i) {
                return None;
            }
            let span = start..start + text[start..end].trim_end().len();
            spans.insert(i.name.clone(), (span, indent));
        }
        Some(EntryText {
            text,
            head,
            body,
            close,
            spans,
        })
    }

    /// The text before the entry's first instruction: the header, the tables, every
    /// computation before the entry and the entry's opening line.
    pub(super) fn before(&self) -> (&'s str, &'s str) {
        (&self.text[..self.head], &self.text[self.head..self.body])
    }

    /// The text from the entry's closing `}` to the end.
    pub(super) fn after(&self) -> &'s str {
        &self.text[self.close..]
    }

    /// Entry instruction `name`'s line as read (indent, text, newline).
    pub(super) fn line(&self, name: &str) -> Option<String> {
        let (span, indent) = self.spans.get(name)?;
        Some(format!("{indent}{}\n", &self.text[span.clone()]))
    }
}

/// Byte offsets of the starts of the lines of `text`.
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(k, _)| k + 1))
        .collect()
}

/// The byte offset of a 1-based line and column (in characters).
fn offset(text: &str, lines: &[usize], p: Pos) -> Option<usize> {
    let start = *lines.get(p.line.checked_sub(1)?)?;
    let rest = &text[start..];
    let column = p.column.checked_sub(1)?;
    match rest.char_indices().nth(column) {
        Some((k, _)) => Some(start + k),
        None => (rest.chars().count() == column).then_some(text.len()),
    }
}

/// Whether `span` is the text of `i`: `ROOT` (for the root) and its name, with or without `%`.
fn starts_with_name(span: &str, i: &Instruction) -> bool {
    let mut s = span;
    if i.is_root {
        let Some(r) = s.strip_prefix("ROOT") else {
            return false;
        };
        s = r.trim_start();
    }
    let s = s.strip_prefix('%').unwrap_or(s);
    s.strip_prefix(i.name.as_str())
        .is_some_and(|r| r.starts_with(|c: char| c.is_whitespace() || c == '='))
}

/// The offset of the first `}` after `from` that closes no bracket opened after `from`,
/// skipping double-quoted strings (with `\` escapes). O(text).
fn closing_brace(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut k = from;
    while k < bytes.len() {
        match bytes[k] {
            b'"' => {
                k += 1;
                while k < bytes.len() && bytes[k] != b'"' {
                    k += if bytes[k] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            b'}' if depth == 0 => return Some(k),
            b')' | b']' | b'}' => depth = depth.checked_sub(1)?,
            _ => {}
        }
        k += 1;
    }
    None
}

/// What an instruction of the written entry is to XLA's sync conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AsyncRole {
    /// The start of an async collective.
    Start,
    /// The done of an async collective (its operand 0 is the start).
    Done,
    /// `parameter`, `constant`, `bitcast`, `get-tuple-element`: no work.
    Nop,
    /// Anything else: work that a pair in flight overlaps.
    Work,
}

/// The role of `i` (an instruction of `module`), as XLA's `hlo_query::IsAsyncCollectiveStartOp`
/// / `IsAsyncCollectiveDoneOp` and the GPU pass's `is_nop` see it. `async-start`/`async-done`
/// count when the wrapped computation's root is a collective.
pub(super) fn role(module: &Module, i: &Instruction) -> AsyncRole {
    match i.opcode.as_str() {
        "parameter" | "constant" | "bitcast" | "get-tuple-element" => AsyncRole::Nop,
        "all-reduce-start" | "all-gather-start" | "collective-permute-start" => AsyncRole::Start,
        "all-reduce-done" | "all-gather-done" | "collective-permute-done" => AsyncRole::Done,
        "async-start" | "async-done" if wraps_collective(module, i) => {
            if i.opcode == "async-start" {
                AsyncRole::Start
            } else {
                AsyncRole::Done
            }
        }
        _ => AsyncRole::Work,
    }
}

/// Whether an `async-start`/`async-done` wraps a collective (`calls=` names a computation whose
/// root is one).
fn wraps_collective(module: &Module, i: &Instruction) -> bool {
    let Some(name) = i.attribute("calls").and_then(|a| a.computation().ok()) else {
        return false;
    };
    module.computation(name).is_some_and(|c| {
        c.instructions
            .get(c.root)
            .is_some_and(|r| crate::hlo::COLLECTIVE_OPCODES.contains(&r.opcode.as_str()))
    })
}

/// For a sequence of `(name, role, operand 0)`, the starts XLA's sync conversion makes
/// synchronous (see the module docs). O(sequence log sequence).
pub(super) fn sync_starts<'a>(
    sequence: impl IntoIterator<Item = (&'a str, AsyncRole, Option<&'a str>)>,
) -> Vec<&'a str> {
    let mut in_flight: Vec<&str> = Vec::new();
    let mut sync = Vec::new();
    for (name, role, operand) in sequence {
        match role {
            AsyncRole::Start => in_flight.push(name),
            AsyncRole::Done => {
                if let Some(k) = operand.and_then(|o| in_flight.iter().position(|s| *s == o)) {
                    sync.push(in_flight.swap_remove(k));
                }
            }
            AsyncRole::Nop => {}
            AsyncRole::Work => in_flight.clear(),
        }
    }
    sync
}

/// `line` with the `"is_sync":` value of its `backend_config` set to `sync`; `None` when the
/// line has none or already says so.
pub(super) fn set_is_sync(line: &str, sync: bool) -> Option<String> {
    let config = line.find("backend_config=")?;
    const KEY: &str = "\"is_sync\":";
    let at = config + line[config..].find(KEY)? + KEY.len();
    let rest = &line[at..];
    let old = if rest.starts_with("true") {
        "true"
    } else if rest.starts_with("false") {
        "false"
    } else {
        return None;
    };
    let new = if sync { "true" } else { "false" };
    (old != new).then(|| format!("{}{new}{}", &line[..at], &rest[old.len()..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_sync_is_set_in_the_backend_config_only() {
        let line = r#"  %s = f32[2] all-reduce-start(%a), metadata={op_name="is_sync"}, backend_config={"collective_backend_config":{"is_sync":true,"is_pipelined":false}}"#;
        let got = set_is_sync(line, false).unwrap();
        assert_eq!(got, line.replace("\"is_sync\":true", "\"is_sync\":false"));
        assert_eq!(set_is_sync(line, true), None);
        assert_eq!(set_is_sync("  %s = f32[2] add(%a, %b)", true), None);
    }

    #[test]
    fn sync_follows_xla_conversion() {
        use AsyncRole::*;
        // a: only a bitcast between its start and done (sync); b: a fusion between (async);
        // c: a start and done of another pair between (sync, as XLA's pass says).
        let seq = [
            ("a", Start, None),
            ("x", Nop, None),
            ("a.d", Done, Some("a")),
            ("b", Start, None),
            ("f", Work, None),
            ("b.d", Done, Some("b")),
            ("c", Start, None),
            ("e", Start, None),
            ("e.d", Done, Some("e")),
            ("c.d", Done, Some("c")),
        ];
        let mut got = sync_starts(seq);
        got.sort_unstable();
        assert_eq!(got, ["a", "c", "e"]);
    }

    #[test]
    fn closing_brace_skips_strings_and_nested_brackets() {
        let t = r#"%x = f32[2]{0} add(%a), metadata={op_name="}{"} }"#;
        assert_eq!(closing_brace(t, 0), Some(t.len() - 1));
    }
}
