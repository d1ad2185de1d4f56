//! Computations XLA lets only one instruction call, cloned for every copy the exporter writes.
//!
//! XLA's verifier (`xla/service/hlo_verifier.cc`) requires:
//!
//! - **one caller per fused computation**: `CheckFusionInstruction` fails with "Instruction of
//!   fused computation does not match expected instruction" unless the fusion's computation's
//!   `FusionInstruction()` is that fusion, a back-pointer the parser sets for each caller in
//!   turn, so a second fusion calling the same computation takes it from the first;
//! - **one async chain per wrapped computation**: an `async-start`, its `async-update`s and
//!   its `async-done` share their wrapped computation (`CheckAsyncOpOperand`), which belongs
//!   to that chain alone;
//! - **instruction names unique in the whole module** (`InstructionVerifier::Preprocess`: "HLO
//!   has name that is not unique within module"), fused computations included.
//!
//! XLA prints both kinds of reference as `calls=`; every other called computation
//! (`to_apply=` reducers and comparators, `condition=`/`body=`, `branch_computations=`,
//! `called_computations=`) may be shared and is not cloned.
//!
//! An unrolled loop iteration or an inlined call writes copies of the instructions of a
//! computation that stays in the module (the loop body, the callee), and that computation's
//! instructions remain callers of what they call. So each copy written with prefix `p` (its
//! name is `p` + the original name) that has `calls=%c` calls a clone of `c` named `p` + `c`,
//! whose instructions are named `p` + their names, and whose own `calls=` are cloned the same
//! way (the callees of a nested fusion); the copies of one async chain share their prefix and
//! so their clone. A clone's name that is taken (a computation, or an instruction of the
//! module, of a clone or of the written entry) gains `.1`, `.2`, ... A clone's collectives
//! (the op an async computation wraps) get fresh `channel_id`s, as the unrolled iterations'
//! collectives in the entry do. The clones are written
//! before the entry, each after the clones it calls (XLA's parser reads a computation's
//! callees before it).

use std::collections::{BTreeMap, BTreeSet};

use super::{control_names, ExportError};
use crate::hlo::ast::{Attribute, Computation, Instruction, Module};

/// The clones made so far, and the names they took.
pub(super) struct Clones<'m> {
    module: &'m Module,
    /// Computation names of the module and of the clones.
    computations: BTreeSet<String>,
    /// Instruction names of the module.
    module_instructions: BTreeSet<&'m str>,
    /// Instruction names of the clones.
    instructions: BTreeSet<String>,
    /// The clone of each (prefix, computation).
    made: BTreeMap<(String, String), String>,
    /// The clones, each after the clones it calls.
    pub(super) written: Vec<Computation>,
}

impl<'m> Clones<'m> {
    pub(super) fn new(module: &'m Module) -> Self {
        Clones {
            module,
            computations: module.computations.iter().map(|c| c.name.clone()).collect(),
            module_instructions: module
                .computations
                .iter()
                .flat_map(|c| &c.instructions)
                .map(|i| i.name.as_str())
                .collect(),
            instructions: BTreeSet::new(),
            made: BTreeMap::new(),
            written: Vec::new(),
        }
    }

    /// Whether an instruction of a clone has taken `name`.
    pub(super) fn has_instruction(&self, name: &str) -> bool {
        self.instructions.contains(name)
    }

    /// The `calls=` value for the copy of `i` written with `prefix` (non-empty): `i`'s called
    /// computations cloned for it. `None` when `i` has no `calls=`. `entry` says whether a
    /// name is taken by an instruction of the written entry; a clone's collectives take fresh
    /// channel ids from `next_channel`.
    pub(super) fn calls(
        &mut self,
        i: &Instruction,
        prefix: &str,
        entry: &dyn Fn(&str) -> bool,
        next_channel: &mut u64,
    ) -> Result<Option<String>, ExportError> {
        let Some(a) = i.attribute("calls") else {
            return Ok(None);
        };
        let mut cx = Context {
            entry,
            next_channel,
        };
        self.value(i, a, prefix, &mut cx, 0).map(Some)
    }

    fn value(
        &mut self,
        i: &Instruction,
        a: &Attribute,
        prefix: &str,
        cx: &mut Context<'_>,
        depth: usize,
    ) -> Result<String, ExportError> {
        let list = a.value.trim_start().starts_with('{');
        let names: Vec<String> = if list {
            a.computations()?.into_iter().map(str::to_string).collect()
        } else {
            vec![a.computation()?.to_string()]
        };
        let mut cloned = Vec::with_capacity(names.len());
        for n in &names {
            cloned.push(format!("%{}", self.clone_of(i, n, prefix, cx, depth)?));
        }
        Ok(if list {
            format!("{{{}}}", cloned.join(", "))
        } else {
            cloned.concat()
        })
    }

    /// The clone of computation `name` for prefix `prefix` (made once). O(its instructions).
    fn clone_of(
        &mut self,
        caller: &Instruction,
        name: &str,
        prefix: &str,
        cx: &mut Context<'_>,
        depth: usize,
    ) -> Result<String, ExportError> {
        let key = (prefix.to_string(), name.to_string());
        if let Some(c) = self.made.get(&key) {
            return Ok(c.clone());
        }
        let unsupported = |reason: String| ExportError::Unsupported {
            instruction: caller.name.clone(),
            reason,
        };
        if depth >= 64 {
            return Err(unsupported(format!(
                "its computation `%{name}` nests `calls=` more than 64 deep"
            )));
        }
        let comp = self
            .module
            .computation(name)
            .ok_or_else(|| unsupported(format!("calls `%{name}`, which is not in the module")))?;
        let mut c = comp.clone();
        c.is_entry = false;
        c.name = fresh(&format!("{prefix}{name}"), |n| {
            self.computations.contains(n)
        });
        self.computations.insert(c.name.clone());
        let mut renamed: BTreeMap<&str, String> = BTreeMap::new();
        for i in &comp.instructions {
            let n = fresh(&format!("{prefix}{}", i.name), |n| {
                self.module_instructions.contains(n)
                    || self.instructions.contains(n)
                    || (cx.entry)(n)
            });
            self.instructions.insert(n.clone());
            renamed.insert(&i.name, n);
        }
        let rename = |o: &str| {
            renamed.get(o).cloned().ok_or_else(|| {
                unsupported(format!("`%{o}` is read in `%{name}` but not defined there"))
            })
        };
        for (k, i) in comp.instructions.iter().enumerate() {
            let mut attributes = i.attributes.clone();
            for a in &mut attributes {
                match a.name.as_str() {
                    "control-predecessors" => {
                        let preds = control_names(a)
                            .iter()
                            .map(|o| rename(o).map(|n| format!("%{n}")))
                            .collect::<Result<Vec<_>, _>>()?;
                        a.value = format!("{{{}}}", preds.join(", "));
                    }
                    "calls" => a.value = self.value(i, a, prefix, cx, depth + 1)?,
                    "channel_id" => {
                        a.value = cx.next_channel.to_string();
                        *cx.next_channel += 1;
                    }
                    _ => {}
                }
            }
            let written = &mut c.instructions[k];
            written.attributes = attributes;
            written.name = rename(&i.name)?;
            written.operands = i
                .operands
                .iter()
                .map(|o| rename(o))
                .collect::<Result<_, _>>()?;
        }
        c.signature = rename_parameters(&comp.signature, &renamed);
        self.made.insert(key, c.name.clone());
        self.written.push(c);
        Ok(self.made[&(prefix.to_string(), name.to_string())].clone())
    }
}

/// What a clone reads and takes beyond the module.
struct Context<'a> {
    /// Whether a name is taken by an instruction of the written entry.
    entry: &'a dyn Fn(&str) -> bool,
    /// The next free channel id.
    next_channel: &'a mut u64,
}

/// `base`, or `base.1`, `base.2`, ... the first that `taken` refuses.
fn fresh(base: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_string();
    }
    (1..)
        .map(|k| format!("{base}.{k}"))
        .find(|n| !taken(n))
        .expect("some suffix is free")
}

/// A computation signature `(a: f32[], b: f32[]) -> f32[]` with its parameter names renamed.
fn rename_parameters(signature: &str, renamed: &BTreeMap<&str, String>) -> String {
    let Some(close) = parameters_end(signature) else {
        return signature.to_string();
    };
    let (params, rest) = signature.split_at(close);
    let mut out = String::with_capacity(signature.len() + 16);
    let mut depth = 0usize;
    let mut at_name = false;
    let mut k = 0;
    while let Some(c) = params[k..].chars().next() {
        if at_name && !c.is_whitespace() {
            at_name = false;
            let end = params[k..].find(':').map(|e| k + e);
            let name = end.map(|e| params[k..e].trim_end());
            if let Some((name, n)) = name.and_then(|name| {
                let bare = name.strip_prefix('%').unwrap_or(name);
                renamed.get(bare).map(|n| (name, n))
            }) {
                if name.starts_with('%') {
                    out.push('%');
                }
                out.push_str(n);
                k += name.len();
                continue;
            }
        }
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                at_name = depth == 1 && c == '(';
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 1 => at_name = true,
            _ => {}
        }
        out.push(c);
        k += c.len_utf8();
    }
    out.push_str(rest);
    out
}

/// The byte offset of the `)` that closes a signature's parameter list.
fn parameters_end(signature: &str) -> Option<usize> {
    let s = signature.trim_start();
    if !s.starts_with('(') {
        return None;
    }
    let offset = signature.len() - s.len();
    let mut depth = 0usize;
    for (k, c) in s.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(offset + k);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_names_are_renamed_in_the_signature_only() {
        let renamed: BTreeMap<&str, String> = [
            ("param_0.1", "w.it3.param_0.1".to_string()),
            ("p1", "w.it3.p1".to_string()),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            rename_parameters(
                "(param_0.1: (s32[], f32[2,3]{1,0}), p1: bf16[4]) -> (s32[], p1)",
                &renamed
            ),
            "(w.it3.param_0.1: (s32[], f32[2,3]{1,0}), w.it3.p1: bf16[4]) -> (s32[], p1)"
        );
        assert_eq!(rename_parameters("", &renamed), "");
        assert_eq!(fresh("a", |n| n == "a" || n == "a.1"), "a.2");
    }
}
