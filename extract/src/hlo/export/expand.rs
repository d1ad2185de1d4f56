//! The written entry computation's instructions: the entry's, loops unrolled and calls
//! inlined, sync collectives split into async pairs; and their sequence for a plan.

use std::collections::BTreeMap;

use concerto_graph::{Graph, OpId};

use super::clones::Clones;
use super::{async_form, by_name, control_names, AsyncForm, ExportError, Inst, Kind};
use crate::hlo::ast::{Computation, Instruction, Module};
use crate::hlo::lower::{keeps_loop, trip_count, ImportOptions};

/// Builds the written entry computation's instructions: the entry's, loops unrolled.
pub(super) struct Expander<'m> {
    module: &'m Module,
    graph: &'m Graph,
    options: &'m ImportOptions,
    pub(super) insts: Vec<Inst<'m>>,
    /// Instruction index of each written name.
    pub(super) index: BTreeMap<String, usize>,
    /// The written instruction of each graph op.
    pub(super) by_op: Vec<Option<usize>>,
    /// Each graph op by name.
    ops: BTreeMap<&'m str, OpId>,
    /// Result shape text of each written name.
    pub(super) shapes: BTreeMap<String, &'m str>,
    next_channel: u64,
    pub(super) iterations: usize,
    depth: usize,
    /// Loop iterations after the first around the current instruction: their collectives get
    /// fresh channel ids.
    copies: usize,
    /// The computations cloned for copies of `calls=` instructions (see `clones`).
    pub(super) clones: Clones<'m>,
}

impl<'m> Expander<'m> {
    pub(super) fn new(module: &'m Module, graph: &'m Graph, options: &'m ImportOptions) -> Self {
        let next_channel = module
            .computations
            .iter()
            .flat_map(|c| &c.instructions)
            .filter_map(|i| i.attribute("channel_id"))
            .filter_map(|a| a.integer().ok())
            .max()
            .map_or(1, |m| m.max(0) as u64 + 1);
        Expander {
            module,
            graph,
            options,
            insts: Vec::new(),
            index: BTreeMap::new(),
            by_op: vec![None; graph.len()],
            ops: by_name(graph),
            shapes: BTreeMap::new(),
            next_channel,
            iterations: 0,
            depth: 0,
            copies: 0,
            clones: Clones::new(module),
        }
    }

    fn unsupported(i: &Instruction, reason: impl Into<String>) -> ExportError {
        ExportError::Unsupported {
            instruction: i.name.clone(),
            reason: reason.into(),
        }
    }

    /// A new written name; an error if the module has it already.
    fn claim(&mut self, i: &Instruction, name: String) -> Result<String, ExportError> {
        if self.index.contains_key(&name) || self.clones.has_instruction(&name) {
            return Err(Self::unsupported(
                i,
                format!("its written name `%{name}` is taken by another instruction"),
            ));
        }
        Ok(name)
    }

    fn push(&mut self, inst: Inst<'m>) {
        self.index.insert(inst.name.clone(), self.insts.len());
        self.shapes
            .insert(inst.name.clone(), inst.instr.shape_text.as_str());
        self.insts.push(inst);
    }

    /// Adds `comp`'s instructions with names prefixed by `prefix`; in a loop body or an inlined
    /// call, `params[k]` is the written name of the value its parameter `k` reads. Returns the
    /// root's written name.
    pub(super) fn expand(
        &mut self,
        comp: &'m Computation,
        prefix: &str,
        params: Option<&[String]>,
    ) -> Result<String, ExportError> {
        // Names read in this computation -> written names.
        let mut names: BTreeMap<&'m str, String> = BTreeMap::new();
        let iteration = params.is_some();
        for (k, i) in comp.instructions.iter().enumerate() {
            let operands = i
                .operands
                .iter()
                .map(|o| Self::rename(&names, i, o))
                .collect::<Result<Vec<_>, _>>()?;
            let control = match i.attribute("control-predecessors") {
                Some(a) => control_names(a)
                    .iter()
                    .map(|o| Self::rename(&names, i, o))
                    .collect::<Result<Vec<_>, _>>()?,
                None => Vec::new(),
            };
            let written = match (params, i.opcode.as_str()) {
                (Some(params), "parameter") => Self::parameter_value(i, params)?,
                (_, "call") => self.inline_call(i, prefix, &operands)?,
                (_, "while") => self.unroll_while(i, prefix, &operands)?,
                _ => {
                    let is_root = !iteration && k == comp.root;
                    match self.element(i, &operands, is_root) {
                        Some(element) => element,
                        None => self.write(i, prefix, operands, control, is_root)?,
                    }
                }
            };
            names.insert(&i.name, written);
        }
        let root = &comp.instructions[comp.root];
        names
            .get(root.name.as_str())
            .cloned()
            .ok_or_else(|| Self::unsupported(root, "the root is not defined"))
    }

    /// The written name of operand `o` of `i`, from the names read so far.
    fn rename(
        names: &BTreeMap<&str, String>,
        i: &Instruction,
        o: &str,
    ) -> Result<String, ExportError> {
        names
            .get(o)
            .cloned()
            .ok_or_else(|| Self::unsupported(i, format!("operand `%{o}` is not defined before it")))
    }

    /// The written name of the value parameter `i` of a loop body or an inlined call reads.
    fn parameter_value(i: &Instruction, params: &[String]) -> Result<String, ExportError> {
        let k: usize = i
            .literal
            .as_deref()
            .and_then(|l| l.trim().parse().ok())
            .ok_or_else(|| Self::unsupported(i, "a parameter needs its number"))?;
        let value = params.get(k).ok_or_else(|| {
            Self::unsupported(i, format!("parameter {k} of {} operands", params.len()))
        })?;
        Ok(value.clone())
    }

    /// Inlines the computation `call` `i` calls; returns its root's written name.
    fn inline_call(
        &mut self,
        i: &Instruction,
        prefix: &str,
        operands: &[String],
    ) -> Result<String, ExportError> {
        let callee = self.called(i, "to_apply")?;
        if self.depth >= 64 {
            return Err(Self::unsupported(
                i,
                "calls and loops nest more than 64 deep",
            ));
        }
        self.depth += 1;
        let p = format!("{prefix}{}.in.", i.name);
        let value = self.expand(callee, &p, Some(operands));
        self.depth -= 1;
        value
    }

    /// Unrolls `while` loop `i` over its known trip count; returns the last iteration's state.
    fn unroll_while(
        &mut self,
        i: &Instruction,
        prefix: &str,
        operands: &[String],
    ) -> Result<String, ExportError> {
        let body = self.called(i, "body")?;
        let cond = self.called(i, "condition")?;
        let n = trip_count(self.module, self.options, i, cond, body)
            .map_err(|why| {
                Self::unsupported(i, format!("a while loop without a known trip count: {why}"))
            })?
            .n;
        // The import kept the loop as one costed iteration when unrolling it was too large
        // (its ops are `<loop>.body.*`): writing it unrolled would be another program.
        let kept = format!("{prefix}{}.body.", i.name);
        let kept_ops = self
            .ops
            .range(kept.as_str()..)
            .next()
            .is_some_and(|(name, _)| name.starts_with(&kept));
        let per_iter = body.instructions.len().max(1);
        if kept_ops || keeps_loop(n, per_iter, 0, self.options) {
            return Err(Self::unsupported(
                i,
                format!(
                    "the graph keeps this while loop of {n} iterations as one iteration \
                     costed {n} times (unrolling it passes ImportOptions::max_unrolled, {}); \
                     the exporter writes unrolled loops only",
                    self.options.max_unrolled
                ),
            ));
        }
        if self.depth >= 64 {
            return Err(Self::unsupported(i, "while loops nest more than 64 deep"));
        }
        let [state] = operands else {
            return Err(Self::unsupported(i, "a while loop needs one operand"));
        };
        let mut state = state.clone();
        self.depth += 1;
        for it in 0..n {
            let p = format!("{prefix}{}.it{it}.", i.name);
            self.copies += usize::from(it > 0);
            let next = self.expand(body, &p, Some(std::slice::from_ref(&state)));
            self.copies -= usize::from(it > 0);
            state = next?;
            self.iterations += 1;
        }
        self.depth -= 1;
        Ok(state)
    }

    /// Writes instruction `i` as read, or as an async start and its done; returns the written
    /// name its users read.
    fn write(
        &mut self,
        i: &'m Instruction,
        prefix: &str,
        operands: Vec<String>,
        control: Vec<String>,
        is_root: bool,
    ) -> Result<String, ExportError> {
        let name = self.claim(i, format!("{prefix}{}", i.name))?;
        let op = self.ops.get(name.as_str()).copied();
        let channel = (self.copies > 0 && i.attribute("channel_id").is_some()).then(|| {
            self.next_channel += 1;
            self.next_channel - 1
        });
        let form = op.and_then(|_| async_form(&i.opcode));
        // A copy of an instruction of a computation that stays (a loop body, a callee)
        // calls its own clone of a fused or async wrapped computation.
        let calls = if prefix.is_empty() {
            None
        } else {
            let index = &self.index;
            self.clones.calls(
                i,
                prefix,
                &|n: &str| index.contains_key(n),
                &mut self.next_channel,
            )?
        };
        if let Some(o) = op {
            self.by_op[o.0] = Some(self.insts.len());
        }
        let Some(form) = form else {
            self.push(Inst {
                instr: i,
                name: name.clone(),
                operands,
                control,
                op,
                kind: Kind::Plain,
                root: is_root,
                channel,
                calls,
            });
            return Ok(name);
        };
        if form == AsyncForm::OperandResult
            && i.opcode == "collective-permute"
            && operands.len() != 1
        {
            return Err(Self::unsupported(
                i,
                format!(
                    "a collective-permute of {} operands (the in-place form) has no async form \
                     here",
                    operands.len()
                ),
            ));
        }
        self.push(Inst {
            instr: i,
            name: name.clone(),
            operands,
            control,
            op,
            kind: Kind::Start(form),
            root: false,
            channel,
            calls,
        });
        let done = self.claim(i, format!("{name}.done"))?;
        self.push(Inst {
            instr: i,
            name: done.clone(),
            operands: vec![name],
            control: Vec::new(),
            op: None,
            kind: Kind::Done,
            root: is_root,
            channel: None,
            calls: None,
        });
        Ok(done)
    }

    /// The written name of the element that get-tuple-element `i` (reading the written
    /// `operands`) picks, when its operand is a written `tuple`: its users read that element
    /// directly, so that they wait only for the element's producer, as the import's
    /// element-exact dependencies say (a `tuple` instruction is placed before its first user,
    /// after all its elements). `None` (the instruction is written as read) for any other
    /// instruction, a `get-tuple-element` of anything else (a parameter, a tuple-shaped op,
    /// a forwarding instruction, which the import follows coarsely), with
    /// `control-predecessors`, or the entry's root. O(log instructions).
    fn element(&self, i: &Instruction, operands: &[String], is_root: bool) -> Option<String> {
        if i.opcode != "get-tuple-element"
            || is_root
            || i.attribute("control-predecessors").is_some()
        {
            return None;
        }
        let [tuple] = operands else { return None };
        let index = usize::try_from(i.attribute("index")?.integer().ok()?).ok()?;
        let t = &self.insts[*self.index.get(tuple)?];
        if t.instr.opcode != "tuple" || t.kind != Kind::Plain {
            return None;
        }
        t.operands.get(index).cloned()
    }

    fn called(&self, i: &Instruction, attr: &str) -> Result<&'m Computation, ExportError> {
        let name = i
            .attribute(attr)
            .ok_or_else(|| Self::unsupported(i, format!("`{}` needs `{attr}=`", i.opcode)))?
            .computation()?;
        self.module.computation(name).ok_or_else(|| {
            Self::unsupported(i, format!("calls `%{name}`, which is not in the module"))
        })
    }

    /// The written entry: the plan's ops in `order`, each after what it reads, its control
    /// predecessors and `before[k]` (the dones of the collectives the plan makes instruction
    /// `k` wait for), each placed just before it when not yet placed; then what nothing read,
    /// then the root.
    pub(super) fn sequence(
        &self,
        order: &[OpId],
        before: &[Vec<usize>],
    ) -> Result<Vec<usize>, ExportError> {
        let n = self.insts.len();
        let mut placed = vec![false; n];
        let mut sequence = Vec::with_capacity(n);
        let mut stack: Vec<(usize, bool)> = Vec::new();
        let mut place = |root: usize,
                         placed: &mut Vec<bool>,
                         sequence: &mut Vec<usize>,
                         allow_ops: bool|
         -> Result<(), ExportError> {
            stack.push((root, false));
            while let Some((k, expanded)) = stack.pop() {
                if placed[k] {
                    continue;
                }
                let inst = &self.insts[k];
                if expanded {
                    placed[k] = true;
                    sequence.push(k);
                    continue;
                }
                if k != root && inst.op.is_some() && !allow_ops {
                    return Err(ExportError::Plan {
                        graph: self.graph.name().to_string(),
                        reason: format!(
                            "instruction `%{}` needs `%{}` before it (an operand, a control \
                             predecessor or a wait of the plan), which the plan runs later",
                            self.insts[root].name, inst.name
                        ),
                    });
                }
                stack.push((k, true));
                for o in inst.operands.iter().chain(&inst.control).rev() {
                    let d = self.index[o];
                    if !placed[d] {
                        stack.push((d, false));
                    }
                }
                // The waited-for dones first: the compute stream waits before it reads.
                let extra = before.get(k).map_or(&[][..], Vec::as_slice);
                for &d in extra.iter().rev() {
                    if !placed[d] {
                        stack.push((d, false));
                    }
                }
            }
            Ok(())
        };
        for &op in order {
            let k = self.by_op[op.0].expect("every op has an instruction (checked)");
            place(k, &mut placed, &mut sequence, false)?;
        }
        let root = self
            .insts
            .iter()
            .position(|i| i.root)
            .expect("the entry has a root");
        for k in 0..n {
            if k != root && !placed[k] {
                place(k, &mut placed, &mut sequence, true)?;
            }
        }
        place(root, &mut placed, &mut sequence, true)?;
        // A root that is an op keeps its place among the ops, but goes after the unused
        // instructions that follow it (no op moves, so the plan's order is kept).
        if let Some(at) = sequence.iter().position(|&k| k == root) {
            if sequence[at + 1..]
                .iter()
                .all(|&k| self.insts[k].op.is_none())
            {
                sequence[at..].rotate_left(1);
            }
        }
        Ok(sequence)
    }
}
