//! One run of a WASI command as an [`Instance`]: every call of `_start` is
//! a fresh engine instance (a command's `_start` runs once per process),
//! instantiated untimed, with the meter handed to its [`Host`] so the
//! markers start and stop it. What the run printed and how it ended stay
//! for the shape's verify ([`Instance::wasi_host`]).

use super::{Host, Region, Setup, Stop};
use crate::engines::{EngineError, Instance};
use crate::measure::Meter;
use std::sync::Arc;

/// An engine's side of a WASI module: compiled once, instantiated per run.
pub trait Runner {
    fn instantiate(&self) -> Result<Box<dyn Started>, EngineError>;
}

/// A fresh instance, before its `_start`.
pub trait Started {
    /// Call `_start` with `host` serving its imports, the call bracketed
    /// by [`Host::enter`] and [`Host::leave`]. An import that ends the run
    /// makes the engine trap; why is in the host's [`Host::stop`].
    fn start(&mut self, host: &mut Host) -> Result<(), EngineError>;
}

/// A WASI module on one engine, as the rep loop sees it.
pub struct Process {
    runner: Box<dyn Runner>,
    setup: Arc<Setup>,
    last: Option<Host>,
}

impl Process {
    pub fn new(runner: Box<dyn Runner>, setup: Arc<Setup>) -> Self {
        Process {
            runner,
            setup,
            last: None,
        }
    }

    /// One run: the outcome, and the host with what it printed.
    fn run(&self, meter: Option<Meter>) -> (Host, Result<(), EngineError>) {
        let mut host = Host::new(self.setup.clone(), meter);
        let mut run = match self.runner.instantiate() {
            Ok(run) => run,
            Err(e) => return (host, Err(e)),
        };
        let outcome = run.start(&mut host);
        let outcome = judge(&host, self.setup.region, outcome);
        (host, outcome)
    }
}

/// How a run ended, in one line when it failed: an exit code, a broken
/// protocol or limit, a trap.
pub fn judge(
    host: &Host,
    region: Region,
    outcome: Result<(), EngineError>,
) -> Result<(), EngineError> {
    let failed = |why: String| Err(EngineError::Process(why));
    match (&host.stop, outcome) {
        (Some(Stop::Exit(0)), _) | (None, Ok(())) => {}
        (Some(Stop::Exit(code)), _) => {
            return failed(format!("the module exited with code {code}"))
        }
        (Some(Stop::Fault(why)), _) => return failed(format!("the module {why}")),
        (None, Err(e)) => return Err(e),
    }
    if region != Region::Whole && host.starts == 0 {
        return failed("the module never called bench.start".into());
    }
    if region == Region::Between && host.ends == 0 {
        return failed("the module never called bench.end".into());
    }
    Ok(())
}

impl Instance for Process {
    fn call(
        &mut self,
        export: &str,
        _arg: Option<i32>,
        meter: Option<&mut Meter>,
    ) -> Result<Option<i32>, EngineError> {
        if export != "_start" {
            return Err(EngineError::MissingExport(export.to_string()));
        }
        let (mut host, outcome) = match meter {
            Some(m) => {
                let (mut host, outcome) = self.run(Some(std::mem::take(m)));
                *m = host.take_meter().unwrap_or_default();
                (host, outcome)
            }
            None => self.run(None),
        };
        host.take_meter();
        self.last = Some(host);
        outcome.map(|()| None)
    }
    fn write_memory(&mut self, _offset: u64, _data: &[u8]) -> Result<(), EngineError> {
        Err(no_memory())
    }
    fn read_memory(&mut self, _offset: u64, _len: usize) -> Result<Vec<u8>, EngineError> {
        Err(no_memory())
    }
    fn wasi_host(&self) -> Option<&Host> {
        self.last.as_ref()
    }
}

fn no_memory() -> EngineError {
    EngineError::Memory("a WASI command's memory lives only during its run".into())
}
