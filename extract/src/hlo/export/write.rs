//! Writing instructions and computations as HLO text.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::verbatim::EntryText;
use super::{scheduled_header, AsyncForm, Inst, Kind};
use crate::hlo::ast::{Computation, Module};

pub(super) fn write_header(out: &mut String, module: &Module) {
    let _ = write!(out, "HloModule {}, is_scheduled=true", module.name);
    for a in &module.attributes {
        if a.name != "is_scheduled" {
            let _ = write!(out, ", {}={}", a.name, a.value);
        }
    }
    out.push_str("\n\n");
}

pub(super) fn write_computation_head(out: &mut String, c: &Computation) {
    if c.is_entry {
        out.push_str("ENTRY ");
    }
    let _ = write!(out, "%{}", c.name);
    if !c.signature.is_empty() {
        let _ = write!(out, " {}", c.signature);
    }
    out.push_str(" {\n");
}

pub(super) fn write_computation_tail(out: &mut String, c: &Computation) {
    out.push('}');
    for a in &c.attributes {
        let _ = write!(out, ", {}={}", a.name, a.value);
    }
    out.push_str("\n\n");
}

/// A computation as read (instructions in text order).
pub(super) fn write_computation(out: &mut String, c: &Computation) {
    write_computation_head(out, c);
    for i in &c.instructions {
        write_instruction(
            out,
            i.is_root,
            &i.name,
            &i.shape_text,
            &i.opcode,
            i.literal.as_deref(),
            &i.operands,
            i.attributes
                .iter()
                .map(|a| (a.name.as_str(), a.value.clone())),
        );
    }
    write_computation_tail(out, c);
}

/// One instruction of the written entry.
pub(super) fn write_inst(out: &mut String, inst: &Inst<'_>, shapes: &BTreeMap<String, &str>) {
    let i = inst.instr;
    let attributes = || {
        i.attributes.iter().map(|a| match a.name.as_str() {
            "control-predecessors" => (
                a.name.as_str(),
                format!(
                    "{{{}}}",
                    inst.control
                        .iter()
                        .map(|c| format!("%{c}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            "calls" => (
                a.name.as_str(),
                inst.calls.clone().unwrap_or_else(|| a.value.clone()),
            ),
            "channel_id" => (
                a.name.as_str(),
                inst.channel
                    .map_or_else(|| a.value.clone(), |c| c.to_string()),
            ),
            _ => (a.name.as_str(), a.value.clone()),
        })
    };
    let is_root = inst.root;
    match inst.kind {
        Kind::Plain => {
            write_instruction(
                out,
                is_root,
                &inst.name,
                &i.shape_text,
                &i.opcode,
                i.literal.as_deref(),
                &inst.operands,
                attributes(),
            );
        }
        Kind::Start(form) => {
            let operand_shapes: Vec<&str> = inst
                .operands
                .iter()
                .map(|o| shapes.get(o).copied().unwrap_or(""))
                .collect();
            let ins = match operand_shapes.as_slice() {
                [one] if form != AsyncForm::Wrapped => (*one).to_string(),
                many => format!("({})", many.join(", ")),
            };
            let shape = match form {
                AsyncForm::SameShape => i.shape_text.clone(),
                AsyncForm::OperandResult | AsyncForm::Wrapped => {
                    format!("({ins}, {})", i.shape_text)
                }
            };
            write_instruction(
                out,
                false,
                &inst.name,
                &shape,
                &format!("{}-start", i.opcode),
                None,
                &inst.operands,
                attributes(),
            );
        }
        Kind::Done => {
            write_instruction(
                out,
                is_root,
                &inst.name,
                &i.shape_text,
                &format!("{}-done", i.opcode),
                None,
                &inst.operands,
                std::iter::empty(),
            );
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn write_instruction<'a>(
    out: &mut String,
    is_root: bool,
    name: &str,
    shape: &str,
    opcode: &str,
    literal: Option<&str>,
    operands: &[String],
    attributes: impl Iterator<Item = (&'a str, String)>,
) {
    out.push_str("  ");
    if is_root {
        out.push_str("ROOT ");
    }
    let _ = write!(out, "%{name} = {shape} {opcode}(");
    match literal {
        Some(l) => out.push_str(l),
        None => {
            for (k, o) in operands.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "%{o}");
            }
        }
    }
    out.push(')');
    for (name, value) in attributes {
        let _ = write!(out, ", {name}={value}");
    }
    out.push('\n');
}

/// The written module: around the source's entry when there is one (its header marked
/// scheduled), else every computation written from the syntax tree; the `clones` go just
/// before the entry, whose instructions are `lines`.
pub(super) fn module_text(
    module: &Module,
    source: Option<&EntryText<'_>>,
    clones: &[Computation],
    lines: &[String],
) -> String {
    let mut text = String::new();
    match source {
        Some(s) => {
            let (before, head) = s.before();
            text.push_str(&scheduled_header(before, module));
            for c in clones {
                write_computation(&mut text, c);
            }
            text.push_str(head);
            for l in lines {
                text.push_str(l);
            }
            text.push_str(s.after());
        }
        None => {
            write_header(&mut text, module);
            // The stack-frame tables go before the computations, where XLA prints (and its
            // parser expects) them.
            for t in &module.tables {
                text.push_str(t);
                text.push_str("\n\n");
            }
            for c in &module.computations {
                if c.is_entry {
                    for c in clones {
                        write_computation(&mut text, c);
                    }
                    write_computation_head(&mut text, c);
                    for l in lines {
                        text.push_str(l);
                    }
                    write_computation_tail(&mut text, c);
                } else {
                    write_computation(&mut text, c);
                }
            }
        }
    }
    text
}
