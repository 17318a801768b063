//! The worker's end of the pipe: the loop a generated worker binary runs
//! (its `main` is one call to [`main`] with the adapter's engine factory).
//!
//! A worker is this library plus one engine build plus its adapter. It
//! drives the engine with the same [`InProcessArm`] an in-process arm uses
//! (prepare a fresh instance, then reset, timed call, verify per rep), so a
//! worker arm differs from an in-process one only by the pipe. Proposals are
//! probed at startup by running tiny modules (measured, not advertised), so
//! the session's skip decisions need no knowledge of the build.

use super::barrier::{Barrier, Released};
use super::protocol::{Request, Response, ShapeSource, WireError, PROTOCOL};
use crate::arm::{Arm, Duet, DuetMet, InProcessArm, Rep};
use crate::engines::Engine;
use crate::measure::counters::{CounterChoice, CounterSet};
use crate::proposals::{Proposal, Proposals};
use crate::shapes::{
    self, command::Command, recipe::Recipe, user::UserShape, Params, Shape, ShapeModule,
};
use std::cell::Cell;
use std::io::{BufRead, Write};
use std::rc::Rc;

/// Makes the engine from the arm's options.
pub type Factory = fn(&[String]) -> Result<Box<dyn Engine>, String>;

/// Compiles a WASI command with the arm's options, its imports routed to
/// the host: a generated worker's routing, compiled against its engine.
pub type WasiFactory =
    fn(&[String], &[u8]) -> Result<Box<dyn crate::wasi::Runner>, crate::engines::EngineError>;

/// Test hook: `LOOPBENCH_WORKER_EXIT=LABEL@REP` makes the worker of arm
/// LABEL exit abruptly when asked for rep REP (a crash mid-session), and
/// `LOOPBENCH_WORKER_HANG=LABEL@REP` makes it stop answering.
pub const EXIT_HOOK: &str = "LOOPBENCH_WORKER_EXIT";
pub const HANG_HOOK: &str = "LOOPBENCH_WORKER_HANG";

/// The engine a process serving a compiled-in engine serves; the
/// server's factory is a plain `fn`.
static COMPILED_IN: std::sync::OnceLock<crate::arm::EngineKind> = std::sync::OnceLock::new();

fn compiled_in(options: &[String]) -> Result<Box<dyn Engine>, String> {
    let spec = compiled_in_spec(options).ok_or("no engine chosen")?;
    spec.build().map_err(|e| e.to_string())
}

/// The routing of WASI commands on the compiled-in engine.
fn compiled_in_wasi(
    options: &[String],
    wasm: &[u8],
) -> Result<Box<dyn crate::wasi::Runner>, crate::engines::EngineError> {
    let spec = compiled_in_spec(options)
        .ok_or_else(|| crate::engines::EngineError::Config("no engine chosen".into()))?;
    spec.wasi(wasm)
}

/// The arm a process serving a compiled-in engine runs.
fn compiled_in_spec(options: &[String]) -> Option<crate::arm::ArmSpec> {
    COMPILED_IN.get().map(|kind| crate::arm::ArmSpec {
        options: options.to_vec(),
        ..crate::arm::ArmSpec::new(*kind)
    })
}

/// Serve `engine`, one of the engines compiled into this binary (`loopbench
/// worker ENGINE`, and the relinked `loopbench-worker ENGINE` of layout
/// variants); returns the process exit code.
pub fn serve_compiled_in(engine: &str) -> i32 {
    match engine.parse::<crate::arm::EngineKind>() {
        Ok(kind) => {
            let _ = COMPILED_IN.set(kind);
            main_with_wasi(compiled_in, Some(compiled_in_wasi))
        }
        Err(e) => {
            crate::diag!("loopbench worker: {e}");
            2
        }
    }
}

/// Entry point of a worker binary; returns the process exit code.
pub fn main(factory: Factory) -> i32 {
    main_with_wasi(factory, None)
}

/// Entry point of a worker binary whose engine also runs WASI commands.
pub fn main_with_wasi(factory: Factory, wasi: Option<WasiFactory>) -> i32 {
    ignore_interrupt();
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    match serve(factory, wasi, &mut stdin.lock(), &mut stdout.lock()) {
        Ok(()) => 0,
        Err(e) => {
            crate::diag!("loopbench worker: {e}");
            2
        }
    }
}

/// A Ctrl-C at the terminal reaches the whole process group: the session
/// stops between shapes and then ends its workers (closing their input),
/// so a worker must not die mid-rep and be reported as crashed.
fn ignore_interrupt() {
    #[cfg(target_os = "linux")]
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
    }
}

/// Answer requests from `input` on `output` until `quit` or end of input.
pub fn serve(
    factory: Factory,
    wasi: Option<WasiFactory>,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> Result<(), String> {
    let mut lines = Lines { input, output };
    let Some(Request::Init {
        label,
        options,
        counters,
        pin,
        layout_seed,
        heap_seed,
        barrier,
        tsc_hz,
    }) = lines.next()?
    else {
        return Err("expected `init` as the first request".into());
    };
    let engine = match factory(&options) {
        Ok(e) => e,
        Err(message) => {
            return lines.send(&Response::Failed {
                error: WireError::Other { message },
            })
        }
    };
    let proposals: Vec<Proposal> = probe(engine.as_ref()).into_iter().collect();
    lines.send(&Response::Ready {
        protocol: PROTOCOL,
        version: engine.version(),
        proposals,
    })?;
    if let Some(seed) = heap_seed {
        super::heap::enable(seed);
    }
    if let Some(cpu) = pin {
        // Hygiene: no migration inside a rep. A core that cannot be had is
        // said on stderr (kept in the arm's error tail) and the worker goes on.
        if let Err(e) = crate::measure::affinity::pin_current_thread(cpu) {
            crate::diag!("loopbench worker: {e}");
        }
    }
    let barrier = match barrier.as_deref().map(super::barrier::Barrier::open) {
        Some(Err(message)) => {
            return lines.send(&Response::Failed {
                error: WireError::Other { message },
            })
        }
        Some(Ok(b)) => Some(b),
        None => None,
    };
    let hooks = Hooks::from_env(&label);
    if let Some(hz) = tsc_hz {
        crate::measure::tsc::adopt_rate(hz);
    }
    let mut arm =
        InProcessArm::from_engine(engine, label.clone()).with_counters(counter_factory(&counters));
    // WASI commands run where the worker has routing: an engine compiled
    // in, or a build whose family has routing compiled against it.
    if let Some(route) = wasi {
        let options = options.clone();
        arm = arm.with_wasi(std::sync::Arc::new(move |wasm: &[u8]| {
            route(&options, wasm)
        }));
    }
    let mut pending = lines.next()?;
    loop {
        match pending.take() {
            None | Some(Request::Quit) => return Ok(()),
            Some(Request::Init { .. }) => return Err("`init` sent twice".into()),
            Some(Request::Phases) => {
                lines.send(&Response::Phases {
                    seconds: crate::phases::take_own(),
                })?;
                pending = lines.next()?;
            }
            Some(Request::Rep { .. } | Request::Resize { .. }) => {
                let message = "`rep` or `resize` before `prepare`".to_string();
                lines.send(&Response::Failed {
                    error: WireError::Other { message },
                })?;
                pending = lines.next()?;
            }
            Some(Request::Prepare {
                shape,
                params,
                iters,
                wasm_hash,
            }) => {
                let module = match crate::phases::time(crate::phases::Phase::Module, || {
                    build_module(shape, &Params::from(&params), iters, wasm_hash)
                }) {
                    Ok(m) => m,
                    Err(message) => {
                        lines.send(&Response::Failed {
                            error: WireError::Other { message },
                        })?;
                        pending = lines.next()?;
                        continue;
                    }
                };
                // Every prepared shape runs at a fresh random stack depth.
                let depth = layout_seed.map_or(0, |s| stack_frames(s, wasm_hash));
                pending = with_stack_offset(depth, &mut || {
                    run_prepared(&arm, &module, &hooks, barrier.as_ref(), &mut lines)
                })?;
            }
        }
    }
}

/// Prepare `module` and answer reps until another request arrives, which is
/// returned.
fn run_prepared(
    arm: &InProcessArm,
    module: &ShapeModule,
    hooks: &Hooks,
    barrier: Option<&Barrier>,
    lines: &mut Lines<'_>,
) -> Result<Option<Request>, String> {
    let mut prepared = match arm.prepare(module) {
        Ok(p) => {
            lines.send(&Response::Prepared)?;
            Some(p)
        }
        Err(e) => {
            lines.send(&Response::Failed {
                error: WireError::from_error(&e),
            })?;
            None
        }
    };
    loop {
        match lines.next()? {
            Some(Request::Rep { rep, duet }) => {
                hooks.before_rep(rep);
                let answer = match prepared.as_mut() {
                    Some(p) => match duet_rep(p.as_mut(), rep, duet, barrier) {
                        Ok(r) => Response::rep(r),
                        Err(error) => Response::Failed { error },
                    },
                    None => Response::Failed {
                        error: WireError::Other {
                            message: "`rep` after a failed `prepare`".into(),
                        },
                    },
                };
                lines.send(&answer)?;
            }
            Some(Request::Resize { iters }) => {
                let answer = match prepared.as_mut().map(|p| p.resize(iters)) {
                    Some(Ok(true)) => Response::Prepared,
                    Some(Ok(false)) => Response::Failed {
                        error: WireError::Other {
                            message: "this worker's arm cannot resize".into(),
                        },
                    },
                    Some(Err(e)) => Response::Failed {
                        error: WireError::from_error(&e),
                    },
                    None => Response::Failed {
                        error: WireError::Other {
                            message: "`resize` after a failed `prepare`".into(),
                        },
                    },
                };
                lines.send(&answer)?;
            }
            other => return Ok(other),
        }
    }
}

/// The same counters the session reads in-process, probed again here.
/// Frames of [`with_stack_offset`] for a seed and a shape: 0 to 63, i.e. a
/// stack offset of 0 to 4 KiB in cache-line steps.
/// One rep; in a duet, on the duet's core and released by the barrier
/// right before the timed call.
fn duet_rep(
    p: &mut (dyn crate::arm::PreparedArm + '_),
    rep: usize,
    duet: Option<Duet>,
    barrier: Option<&Barrier>,
) -> Result<Rep, WireError> {
    let Some(duet) = duet else {
        return p.rep(rep).map_err(|e| WireError::from_error(&e));
    };
    let failed = |message: String| WireError::Other { message };
    let barrier = barrier.ok_or_else(|| failed("a duet rep, but no barrier at `init`".into()))?;
    crate::measure::affinity::pin_current_thread(duet.core).map_err(|e| failed(e.to_string()))?;
    let released: Rc<Cell<Option<Released>>> = Rc::new(Cell::new(None));
    let (b, out) = (barrier.clone(), Rc::clone(&released));
    crate::measure::gate_next_start(Box::new(move || {
        out.set(Some(b.wait(duet.slot, duet.partner, duet.generation)));
    }));
    let result = p.rep(rep);
    // A rep that failed before its timed call never reached the barrier:
    // arrive now, so the partner is not left waiting.
    if let Some(gate) = crate::measure::take_gate() {
        gate();
    }
    let mut r = result.map_err(|e| WireError::from_error(&e))?;
    let met = released
        .get()
        .ok_or_else(|| failed("the timed call never reached the duet barrier".into()))?;
    if !met.met {
        return Err(failed(format!(
            "rep {rep}: the duet partner (slot {}) did not arrive within {} s",
            duet.partner,
            super::barrier::GIVE_UP.as_secs()
        )));
    }
    r.duet = Some(DuetMet {
        generation: duet.generation,
        released_ns: met.at_ns,
        cpu: super::barrier::current_cpu(),
    });
    Ok(r)
}

fn stack_frames(seed: u64, shape: u64) -> usize {
    // splitmix64: a well-mixed draw from (seed, shape).
    let mut z = seed ^ shape.rotate_left(17);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) % 64) as usize
}

/// Run `f` `frames` stack frames of 64 bytes deeper than here: the timed
/// calls then see another stack alignment relative to caches and the
/// predictor's history (Mytkowicz et al. 2009 moved results by changing
/// the environment's size, which shifts the stack).
#[inline(never)]
fn with_stack_offset<R>(frames: usize, f: &mut dyn FnMut() -> R) -> R {
    let pad = [frames as u8; 64];
    std::hint::black_box(&pad);
    if frames == 0 {
        f()
    } else {
        let r = with_stack_offset(frames - 1, f);
        std::hint::black_box(&pad);
        r
    }
}

fn counter_factory(names: &[String]) -> crate::arm::CounterFactory {
    let choice = if names.is_empty() {
        Ok(CounterChoice::None)
    } else {
        names.join(",").parse::<CounterChoice>()
    };
    let set = CounterSet::resolve(&choice.unwrap_or(CounterChoice::None));
    std::sync::Arc::new(move || {
        // Outermost, as in the session: see `session::run`.
        let mut c = crate::measure::disturbance_counters();
        c.extend(set.make());
        c
    })
}

fn build_module(
    shape: ShapeSource,
    params: &Params,
    iters: u64,
    wasm_hash: u64,
) -> Result<ShapeModule, String> {
    let shape: Box<dyn Shape> = match shape {
        ShapeSource::Catalog(name) => shapes::find(&name).ok_or_else(|| {
            format!("this worker's catalog has no shape `{name}` (stale worker?)")
        })?,
        ShapeSource::Module { name, wasm } => {
            Box::new(UserShape::from_wasm(name, wasm, None).map_err(|e| e.to_string())?)
        }
        ShapeSource::Command(source) => Box::new(Command::from_source(*source)?),
        ShapeSource::Recipe(source) => Box::new(Recipe::new(*source)),
    };
    let mut module = ShapeModule::build(shape, params).map_err(|e| e.to_string())?;
    let hash = crate::hash::fnv1a(&[&module.wasm]);
    if hash != wasm_hash {
        return Err(format!(
            "shape {}: the worker generated a different module; its loopbench is stale",
            module.name(),
        ));
    }
    // The module does not depend on the count; the session sets it (an arm
    // may run more than the shape's, e.g. a calibration effect).
    module.set_iters(iters).map_err(|e| e.to_string())?;
    Ok(module)
}

/// One tiny module per proposal; an engine supports the proposal when the
/// module compiles, instantiates and returns 1.
const PROBES: [(Proposal, &str); 4] = [
    (
        Proposal::BulkMemory,
        r#"(module (memory 1) (func (export "f") (result i32)
            i32.const 0 i32.const 1 i32.const 4 memory.fill i32.const 0 i32.load8_u))"#,
    ),
    (
        Proposal::TailCall,
        r#"(module (func $g (result i32) i32.const 1) (func (export "f") (result i32) return_call $g))"#,
    ),
    (
        Proposal::Simd,
        r#"(module (func (export "f") (result i32) v128.const i32x4 1 2 3 4 i32x4.extract_lane 0))"#,
    ),
    (
        Proposal::Threads,
        r#"(module (memory 1 1 shared) (func (export "f") (result i32)
            i32.const 0 i32.const 1 i32.atomic.rmw.add drop i32.const 0 i32.atomic.load))"#,
    ),
];

/// The proposals `engine` runs: its own declaration, confirmed by probes.
pub fn probe(engine: &dyn Engine) -> Proposals {
    let declared = engine.supports();
    PROBES
        .iter()
        .filter(|(p, _)| declared.contains(p))
        .filter(|(_, wat)| runs(engine, wat))
        .map(|(p, _)| *p)
        .collect()
}

fn runs(engine: &dyn Engine, wat: &str) -> bool {
    let Ok(wasm) = wat::parse_str(wat) else {
        return false;
    };
    let Ok(compiled) = engine.compile(&wasm) else {
        return false;
    };
    let Ok(mut instance) = compiled.instantiate() else {
        return false;
    };
    matches!(instance.call("f", None, None), Ok(Some(1)))
}

struct Lines<'a> {
    input: &'a mut dyn BufRead,
    output: &'a mut dyn Write,
}

impl Lines<'_> {
    fn next(&mut self) -> Result<Option<Request>, String> {
        let mut line = String::new();
        let n = self
            .input
            .read_line(&mut line)
            .map_err(|e| format!("reading a request: {e}"))?;
        if n == 0 {
            return Ok(None);
        }
        serde_json::from_str(line.trim_end())
            .map(Some)
            .map_err(|e| format!("bad request `{}`: {e}", line.trim_end()))
    }
    fn send(&mut self, r: &Response) -> Result<(), String> {
        let line = serde_json::to_string(r).map_err(|e| e.to_string())?;
        writeln!(self.output, "{line}")
            .and_then(|_| self.output.flush())
            .map_err(|e| format!("writing a response: {e}"))
    }
}

/// The crash and hang test hooks, resolved for this worker's label.
struct Hooks {
    exit_at: Option<usize>,
    hang_at: Option<usize>,
}

impl Hooks {
    fn from_env(label: &str) -> Self {
        let at = |var: &str| {
            let v = std::env::var(var).ok()?;
            let (l, rep) = v.rsplit_once('@')?;
            (l == label).then(|| rep.parse().ok()).flatten()
        };
        Hooks {
            exit_at: at(EXIT_HOOK),
            hang_at: at(HANG_HOOK),
        }
    }
    fn before_rep(&self, rep: usize) {
        if self.exit_at == Some(rep) {
            crate::diag!("loopbench worker: exiting at rep {rep} ({EXIT_HOOK})");
            std::process::exit(86);
        }
        if self.hang_at == Some(rep) {
            crate::diag!("loopbench worker: hanging at rep {rep} ({HANG_HOOK})");
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::ArmSpec;
    use std::io::Cursor;

    /// The in-process wasmi as a worker factory.
    fn wasmi(options: &[String]) -> Result<Box<dyn Engine>, String> {
        let spec: ArmSpec = std::iter::once("wasmi".to_string())
            .chain((!options.is_empty()).then(|| options.join(",")))
            .collect::<Vec<_>>()
            .join(":")
            .parse()
            .map_err(|e: crate::arm::ArmError| e.to_string())?;
        spec.build().map_err(|e| e.to_string())
    }

    fn converse(requests: &[Request]) -> Vec<Response> {
        let input: String = requests
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        let mut out = Vec::new();
        serve(wasmi, None, &mut Cursor::new(input), &mut out).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn init(options: &[&str]) -> Request {
        Request::Init {
            label: "w".into(),
            options: options.iter().map(|o| o.to_string()).collect(),
            counters: vec![],
            pin: None,
            layout_seed: None,
            heap_seed: None,
            barrier: None,
            tsc_hz: None,
        }
    }

    fn prepare(name: &str, iters: u64) -> Request {
        let params = Params {
            iters: Some(iters),
            bytes: 1 << 16,
            ..Params::default()
        };
        let module = ShapeModule::build(shapes::find(name).unwrap(), &params).unwrap();
        Request::Prepare {
            shape: ShapeSource::Catalog(name.into()),
            params: (&params).into(),
            iters: module.iters,
            wasm_hash: crate::hash::fnv1a(&[&module.wasm]),
        }
    }

    #[test]
    fn serves_a_shape_rep_by_rep() {
        let name = shapes::names()[0].clone();
        let out = converse(&[
            init(&[]),
            prepare(&name, 64),
            Request::Rep { rep: 0, duet: None },
            Request::Rep { rep: 1, duet: None },
            Request::Quit,
        ]);
        assert_eq!(out.len(), 4, "{out:?}");
        match &out[0] {
            Response::Ready {
                protocol,
                version,
                proposals,
            } => {
                assert_eq!(*protocol, PROTOCOL);
                assert!(version.starts_with("wasmi "));
                // wasmi 2 runs bulk memory and tail calls; SIMD only when its
                // `simd` feature is on in this build (another crate of the
                // build may turn it on: the probe is what counts); never
                // threads.
                assert!(proposals.contains(&Proposal::BulkMemory), "{proposals:?}");
                assert!(proposals.contains(&Proposal::TailCall), "{proposals:?}");
                assert!(!proposals.contains(&Proposal::Threads), "{proposals:?}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(out[1], Response::Prepared);
        for r in &out[2..] {
            assert!(matches!(r, Response::Rep { ns, .. } if *ns > 0.0), "{r:?}");
        }
    }

    #[test]
    fn a_prepared_instance_is_resized_and_a_bad_count_refused_and_phases_reported() {
        // A shape counted in groups of eight, so a count off the group exists.
        let name = "br_table_switch";
        let params = Params {
            bytes: 1 << 16,
            ..Params::default()
        };
        let module = ShapeModule::build(shapes::find(name).unwrap(), &params).unwrap();
        let per = module.shape.declared(&module.params).per;
        assert!(per > 1, "{name} must be counted in groups");
        let out = converse(&[
            init(&[]),
            Request::Resize { iters: per },
            prepare(name, per),
            Request::Rep { rep: 0, duet: None },
            Request::Resize { iters: per * 16 },
            Request::Rep { rep: 1, duet: None },
            Request::Resize {
                iters: per * 16 + 1,
            },
            Request::Phases,
        ]);
        // Nothing to resize before `prepare`.
        assert!(matches!(&out[1], Response::Failed { .. }), "{out:?}");
        let out = &out[1..];
        assert_eq!(out[1], Response::Prepared);
        assert!(matches!(&out[2], Response::Rep { .. }), "{out:?}");
        assert_eq!(out[3], Response::Prepared, "resized");
        // The rep at the new count verified (verify checks that count).
        assert!(matches!(&out[4], Response::Rep { .. }), "{out:?}");
        assert!(
            matches!(&out[5], Response::Failed { error: WireError::Other { message } } if message.contains("not a multiple")),
            "{out:?}"
        );
        let Response::Phases { seconds } = &out[6] else {
            panic!("{out:?}")
        };
        for p in [crate::phases::Phase::Compile, crate::phases::Phase::Verify] {
            assert!(seconds.contains_key(&p), "{seconds:?}");
        }
    }

    #[test]
    fn a_stale_module_and_a_bad_option_are_refused() {
        let mut p = prepare(&shapes::names()[0], 64);
        if let Request::Prepare { wasm_hash, .. } = &mut p {
            *wasm_hash ^= 1;
        }
        let out = converse(&[init(&[]), p, Request::Rep { rep: 0, duet: None }]);
        assert!(
            matches!(&out[1], Response::Failed { error: WireError::Other { message } } if message.contains("stale"))
        );
        assert!(matches!(&out[2], Response::Failed { .. }));

        let out = converse(&[init(&["turbo"])]);
        assert_eq!(out.len(), 1);
        assert!(matches!(&out[0], Response::Failed { .. }), "{out:?}");
    }
}
