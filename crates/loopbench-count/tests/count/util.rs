//! wasmi helpers: run a module (original or instrumented) and read counts.

use loopbench_count::{instrument, Counts, Instrumented, OpClass};
use wasmi::{Config, Engine, Instance, Linker, Module, Store, Val};

pub fn engine(fuel: bool) -> Engine {
    let mut config = Config::default();
    config.consume_fuel(fuel);
    Engine::new(&config)
}

/// An instantiated, instrumented module.
pub struct Counted {
    pub inst: Instrumented,
    pub store: Store<()>,
    pub instance: Instance,
}

impl Counted {
    pub fn new(wat: &str) -> Self {
        Self::with_linker(wat, |_, _| {})
    }

    pub fn with_linker(wat: &str, define: impl FnOnce(&mut Linker<()>, &mut Store<()>)) -> Self {
        let wasm = wat::parse_str(wat).expect("wat parses");
        let inst = instrument(&wasm).expect("instrument");
        let engine = engine(false);
        let module = Module::new(&engine, &inst.wasm[..]).expect("wasmi accepts");
        let mut store = Store::new(&engine, ());
        let mut linker = Linker::new(&engine);
        define(&mut linker, &mut store);
        let instance = linker
            .instantiate_and_start(&mut store, &module)
            .expect("instantiate");
        Counted {
            inst,
            store,
            instance,
        }
    }

    /// Call an export with the given arguments; returns its results or the
    /// error (trap).
    pub fn call(&mut self, name: &str, args: &[Val]) -> Result<Vec<Val>, wasmi::Error> {
        call(&mut self.store, &self.instance, name, args)
    }

    pub fn call_i32(&mut self, name: &str, args: &[Val]) -> i32 {
        match self.call(name, args).expect("call succeeds")[..] {
            [Val::I32(v)] => v,
            ref other => panic!("expected one i32, got {other:?}"),
        }
    }

    pub fn counts(&mut self) -> Counts {
        read_counts(&self.inst, &mut self.store, &self.instance)
    }
}

pub fn call(
    store: &mut Store<()>,
    instance: &Instance,
    name: &str,
    args: &[Val],
) -> Result<Vec<Val>, wasmi::Error> {
    let func = instance.get_func(&*store, name).expect("export exists");
    let ty = func.ty(&*store);
    let mut results: Vec<Val> = ty
        .results()
        .iter()
        .map(|t| Val::default_for_ty(*t))
        .collect();
    func.call(&mut *store, args, &mut results)?;
    Ok(results)
}

pub fn read_counts(inst: &Instrumented, store: &mut Store<()>, instance: &Instance) -> Counts {
    let len = instance
        .get_typed_func::<(), i32>(&*store, Instrumented::LEN_EXPORT)
        .expect("len export")
        .call(&mut *store, ())
        .expect("len call");
    assert_eq!(len as u32, inst.slots());
    let read = instance
        .get_typed_func::<i32, i64>(&*store, Instrumented::COUNTER_EXPORT)
        .expect("counter export");
    let counts = inst
        .decode(|slot| read.call(&mut *store, slot as i32))
        .expect("read counters");
    assert_consistent(&counts);
    counts
}

/// Invariants every decoded count satisfies.
pub fn assert_consistent(c: &Counts) {
    assert_eq!(
        c.total_ops,
        c.classes.values().sum::<u64>(),
        "classes sum to total"
    );
    assert_eq!(c.transfers, c.taken_branches + c.calls + c.returns);
    // Block entries are function entries and loop iterations, plus the
    // executed `if`s, which are branch-class instructions.
    let entries: u64 = c.functions.iter().map(|f| f.entries).sum::<u64>()
        + c.loops.iter().map(|l| l.iterations).sum::<u64>();
    assert!(
        c.block_entries >= entries && c.block_entries - entries <= c.class(OpClass::Branch),
        "block entries {} against {entries} entries and iterations",
        c.block_entries
    );
    assert_eq!(c.classes.len(), OpClass::ALL.len(), "every class present");
    assert_eq!(
        c.folded.len(),
        OpClass::ALL.len(),
        "every class present in folded"
    );
    for (class, n) in &c.folded {
        assert!(
            *n <= c.class(*class),
            "folded {class} {n} > {}",
            c.class(*class)
        );
        if !matches!(class, OpClass::Local | OpClass::Const) {
            assert_eq!(*n, 0, "only local and const fold, not {class}");
        }
    }
    let func_ops: u64 = c.functions.iter().map(|f| f.ops).sum();
    assert_eq!(func_ops, c.total_ops, "function ops sum to total");
    for l in &c.loops {
        assert!(l.iterations + 1 >= l.entries, "{l:?}");
    }
}

pub fn i32s(v: &[i32]) -> Vec<Val> {
    v.iter().map(|x| Val::I32(*x)).collect()
}
