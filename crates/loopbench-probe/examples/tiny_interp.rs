//! A tiny stack-machine interpreter with probes in its dispatch loop: the
//! template for putting `loopbench-probe` into an engine.
//!
//! Each executed instruction is one op and one `step`, split into `decode`
//! (opcode byte and LEB128 immediate), `dispatch` (executing arithmetic and
//! locals) and `memory` (loads and stores into a 16 MiB linear memory at
//! pseudo-random addresses). The program runs three times; the last run's
//! breakdown is printed, then the same numbers with probe overhead
//! subtracted, then the share of every phase across the runs.
//!
//! ```text
//! cargo run --release --features enabled --example tiny_interp [-- --json] [-- --ops N]
//! ```

use loopbench_probe::{count_ops, phases, probe, reset, Report, Runs};
use std::process::ExitCode;

phases! {
    static STEP = "step";
    static DECODE = "decode" in STEP;
    static DISPATCH = "dispatch" in STEP;
    static MEMORY = "memory" in STEP;
}

/// The instruction set. Immediates follow the opcode as unsigned LEB128.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Op {
    Const = 0,
    LocalGet = 1,
    LocalSet = 2,
    LocalTee = 3,
    Add = 4,
    Sub = 5,
    Xor = 6,
    Shl = 7,
    ShrU = 8,
    Load = 9,
    Store = 10,
    BrIf = 11,
    Halt = 12,
}

impl Op {
    fn from_byte(b: u8) -> Option<Op> {
        use Op::*;
        [
            Const, LocalGet, LocalSet, LocalTee, Add, Sub, Xor, Shl, ShrU, Load, Store, BrIf, Halt,
        ]
        .get(usize::from(b))
        .copied()
    }

    fn has_immediate(self) -> bool {
        matches!(
            self,
            Op::Const | Op::LocalGet | Op::LocalSet | Op::LocalTee | Op::BrIf
        )
    }
}

/// Appends instructions to a bytecode buffer.
#[derive(Default)]
struct Asm {
    code: Vec<u8>,
}

impl Asm {
    fn op(&mut self, op: Op) -> &mut Self {
        self.code.push(op as u8);
        self
    }

    fn imm(&mut self, op: Op, mut x: u64) -> &mut Self {
        self.code.push(op as u8);
        loop {
            let byte = (x & 0x7f) as u8;
            x >>= 7;
            if x == 0 {
                self.code.push(byte);
                return self;
            }
            self.code.push(byte | 0x80);
        }
    }
}

/// `x` = xorshift state (local 0), `acc` (local 1), `n` = iterations left
/// (local 2). Each iteration advances `x`, reads `mem[x]`, adds it to `acc`,
/// stores `acc` at `mem[x >> 20]`, and loops while `n != 0`.
fn program(iterations: u64) -> Vec<u8> {
    let mut a = Asm::default();
    a.imm(Op::Const, 0x9e37_79b9_7f4a_7c15).imm(Op::LocalSet, 0);
    a.imm(Op::Const, iterations).imm(Op::LocalSet, 2);
    let top = a.code.len() as u64;
    // x ^= x << 13; x ^= x >> 7; x ^= x << 17
    for (shift, op) in [(13, Op::Shl), (7, Op::ShrU), (17, Op::Shl)] {
        a.imm(Op::LocalGet, 0).imm(Op::LocalGet, 0);
        a.imm(Op::Const, shift)
            .op(op)
            .op(Op::Xor)
            .imm(Op::LocalSet, 0);
    }
    // acc += mem[x]
    a.imm(Op::LocalGet, 0).op(Op::Load);
    a.imm(Op::LocalGet, 1).op(Op::Add).imm(Op::LocalSet, 1);
    // mem[x >> 20] = acc
    a.imm(Op::LocalGet, 0).imm(Op::Const, 20).op(Op::ShrU);
    a.imm(Op::LocalGet, 1).op(Op::Store);
    // if --n != 0 goto top
    a.imm(Op::LocalGet, 2).imm(Op::Const, 1).op(Op::Sub);
    a.imm(Op::LocalTee, 2).imm(Op::BrIf, top);
    a.op(Op::Halt);
    a.code
}

const MEMORY_WORDS: usize = 2 * 1024 * 1024; // 16 MiB of u64

struct Machine {
    stack: Vec<u64>,
    locals: [u64; 4],
    memory: Vec<u64>,
}

/// Why the program stopped early; the `usize` is the program counter.
enum Trap {
    BadOpcode(usize, u8),
    Truncated(usize),
    StackUnderflow(usize),
    BadLocal(usize),
}

impl std::fmt::Display for Trap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trap::BadOpcode(pc, byte) => write!(f, "bad opcode {byte:#04x} at pc {pc}"),
            Trap::Truncated(pc) => write!(f, "code ends mid-instruction at pc {pc}"),
            Trap::StackUnderflow(pc) => write!(f, "stack underflow at pc {pc}"),
            Trap::BadLocal(pc) => write!(f, "bad local index at pc {pc}"),
        }
    }
}

impl Machine {
    fn new() -> Machine {
        Machine {
            stack: Vec::with_capacity(64),
            locals: [0; 4],
            memory: (0..MEMORY_WORDS as u64).collect(),
        }
    }

    fn pop(&mut self, pc: usize) -> Result<u64, Trap> {
        self.stack.pop().ok_or(Trap::StackUnderflow(pc))
    }

    fn local(&mut self, pc: usize, i: u64) -> Result<&mut u64, Trap> {
        self.locals.get_mut(i as usize).ok_or(Trap::BadLocal(pc))
    }

    /// Decodes one instruction at `pc`: the op, its immediate, and the next pc.
    fn decode(code: &[u8], pc: usize) -> Result<(Op, u64, usize), Trap> {
        let byte = *code.get(pc).ok_or(Trap::Truncated(pc))?;
        let op = Op::from_byte(byte).ok_or(Trap::BadOpcode(pc, byte))?;
        let mut next = pc + 1;
        let mut imm = 0u64;
        if op.has_immediate() {
            let mut shift = 0;
            loop {
                let b = *code.get(next).ok_or(Trap::Truncated(next))?;
                next += 1;
                imm |= u64::from(b & 0x7f) << shift;
                shift += 7;
                if b & 0x80 == 0 || shift >= 64 {
                    break;
                }
            }
        }
        Ok((op, imm, next))
    }

    /// Runs until `Halt`; returns the number of instructions executed.
    fn run(&mut self, code: &[u8]) -> Result<u64, Trap> {
        let mut pc = 0;
        let mut executed = 0;
        loop {
            let _step = STEP.enter();
            let (op, imm, next) = probe!(DECODE, { Self::decode(code, pc)? });
            pc = next;
            executed += 1;
            count_ops(1);
            match op {
                Op::Load => probe!(MEMORY, {
                    let addr = self.pop(pc)? as usize % MEMORY_WORDS;
                    self.stack.push(self.memory[addr]);
                }),
                Op::Store => probe!(MEMORY, {
                    let value = self.pop(pc)?;
                    let addr = self.pop(pc)? as usize % MEMORY_WORDS;
                    self.memory[addr] = value;
                }),
                Op::Halt => return Ok(executed),
                _ => probe!(DISPATCH, {
                    match op {
                        Op::Const => self.stack.push(imm),
                        Op::LocalGet => {
                            let v = *self.local(pc, imm)?;
                            self.stack.push(v);
                        }
                        Op::LocalSet => *self.local(pc, imm)? = self.pop(pc)?,
                        Op::LocalTee => {
                            let v = *self.stack.last().ok_or(Trap::StackUnderflow(pc))?;
                            *self.local(pc, imm)? = v;
                        }
                        Op::BrIf => {
                            if self.pop(pc)? != 0 {
                                pc = imm as usize;
                            }
                        }
                        binary => {
                            let b = self.pop(pc)?;
                            let a = self.pop(pc)?;
                            self.stack.push(match binary {
                                Op::Add => a.wrapping_add(b),
                                Op::Sub => a.wrapping_sub(b),
                                Op::Xor => a ^ b,
                                Op::Shl => a.wrapping_shl(b as u32),
                                _ => a.wrapping_shr(b as u32),
                            });
                        }
                    }
                }),
            }
        }
    }
}

fn main() -> ExitCode {
    let mut json = false;
    let mut ops: u64 = 3_000_000;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => json = true,
            "--ops" => match args.next().and_then(|n| n.parse().ok()) {
                Some(n) => ops = n,
                None => {
                    eprintln!("--ops needs a number");
                    return ExitCode::FAILURE;
                }
            },
            other => {
                eprintln!("unknown argument {other:?}; usage: tiny_interp [--json] [--ops N]");
                return ExitCode::FAILURE;
            }
        }
    }

    // 29 instructions per iteration.
    let code = program((ops / 29).max(1));
    let mut machine = Machine::new();
    loopbench_probe::calibrate();

    let mut runs = Runs::new();
    for _ in 0..3 {
        reset();
        match machine.run(&code) {
            Ok(executed) => eprintln!("ran {executed} instructions, acc = {}", machine.locals[1]),
            Err(trap) => {
                eprintln!("trap: {trap}");
                return ExitCode::FAILURE;
            }
        }
        runs.push(Report::capture());
    }
    let Some(last) = runs.reports().last().cloned() else {
        return ExitCode::FAILURE;
    };
    if json {
        println!("{}", last.to_json());
    } else {
        println!("{last}");
        println!("--- same run, probe overhead subtracted ---");
        println!("{}", last.subtracting_overhead());
        println!("--- share across runs ---");
        print!("{}", runs.to_text());
    }
    ExitCode::SUCCESS
}
