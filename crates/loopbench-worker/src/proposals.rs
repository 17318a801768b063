//! Which wasm proposals a module uses, found by scanning it with wasmparser,
//! checked against an engine's declared support before the engine sees the
//! module. wasm3 crashes the whole process on opcodes it does not know, so
//! this check is a safety guard as much as a courtesy.

use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt;
use wasmparser::{Operator, Parser, Payload, ValType};

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Proposal {
    /// Shared memory and atomics.
    Threads,
    Simd,
    BulkMemory,
    TailCall,
}

impl fmt::Display for Proposal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Proposal::Threads => "threads (shared memory and atomics)",
            Proposal::Simd => "simd",
            Proposal::BulkMemory => "bulk memory",
            Proposal::TailCall => "tail calls",
        })
    }
}

pub type Proposals = BTreeSet<Proposal>;

/// A module [`required`] cannot read.
#[derive(Debug, thiserror::Error, Clone)]
pub enum ProposalError {
    #[error("invalid wasm: {0}")]
    Invalid(#[source] wasmparser::BinaryReaderError),
    /// Reading a validated module failed.
    #[error("{0}")]
    Read(#[source] wasmparser::BinaryReaderError),
}

/// Validate `wasm` (all features on) and list the proposals it uses.
pub fn required(wasm: &[u8]) -> Result<Proposals, ProposalError> {
    let mut validator = wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all());
    validator
        .validate_all(wasm)
        .map_err(ProposalError::Invalid)?;
    let mut used = Proposals::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.map_err(ProposalError::Read)? {
            Payload::MemorySection(r) => {
                for m in r {
                    if m.map_err(ProposalError::Read)?.shared {
                        used.insert(Proposal::Threads);
                    }
                }
            }
            Payload::ImportSection(r) => {
                for imp in r.into_imports() {
                    if let wasmparser::TypeRef::Memory(m) = imp.map_err(ProposalError::Read)?.ty {
                        if m.shared {
                            used.insert(Proposal::Threads);
                        }
                    }
                }
            }
            Payload::DataSection(r) => {
                for d in r {
                    if matches!(
                        d.map_err(ProposalError::Read)?.kind,
                        wasmparser::DataKind::Passive
                    ) {
                        used.insert(Proposal::BulkMemory);
                    }
                }
            }
            Payload::CodeSectionEntry(body) => {
                for local in body.get_locals_reader().map_err(ProposalError::Read)? {
                    if local.map_err(ProposalError::Read)?.1 == ValType::V128 {
                        used.insert(Proposal::Simd);
                    }
                }
                let mut ops = body.get_operators_reader().map_err(ProposalError::Read)?;
                while !ops.eof() {
                    if let Some(p) = proposal_of(&ops.read().map_err(ProposalError::Read)?) {
                        used.insert(p);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(used)
}

fn proposal_of(op: &Operator) -> Option<Proposal> {
    use Operator::*;
    match op {
        MemoryCopy { .. }
        | MemoryFill { .. }
        | MemoryInit { .. }
        | DataDrop { .. }
        | TableCopy { .. }
        | TableInit { .. }
        | ElemDrop { .. } => Some(Proposal::BulkMemory),
        ReturnCall { .. } | ReturnCallIndirect { .. } | ReturnCallRef { .. } => {
            Some(Proposal::TailCall)
        }
        _ => {
            let name = format!("{op:?}");
            if name.starts_with("V128")
                || name.starts_with("I8x16")
                || name.starts_with("I16x8")
                || name.starts_with("I32x4")
                || name.starts_with("I64x2")
                || name.starts_with("F32x4")
                || name.starts_with("F64x2")
            {
                Some(Proposal::Simd)
            } else if name.contains("Atomic") || name.starts_with("MemoryAtomic") {
                Some(Proposal::Threads)
            } else {
                None
            }
        }
    }
}

/// The first proposal `wasm` needs that `supported` lacks.
pub fn first_missing(needed: &Proposals, supported: &Proposals) -> Option<Proposal> {
    needed.difference(supported).next().copied()
}
