//! `loopbench count`: exact dynamic counts of a shape or any module.

use super::{OutputArgs, ShapeParams};
use crate::error::Error;
use crate::results::{self, Document};
use crate::shapes;
use clap::Args;

#[derive(Args, Debug)]
pub struct CountArgs {
    /// A shape name, or a .wasm/.wat file (with --invoke).
    pub target: String,
    /// The export to call in a module file.
    #[arg(long)]
    pub invoke: Option<String>,
    /// Arguments for the export, parsed by its parameter types.
    #[arg(allow_negative_numbers = true)]
    pub args: Vec<String>,
    #[command(flatten)]
    pub params: ShapeParams,
    /// Stop a module file's call after this much wasmi fuel (default: no limit).
    #[arg(long)]
    pub fuel: Option<u64>,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl CountArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        use crate::count;
        let (counts, iters, stopped) = if let Some(shape) = shapes::find(&self.target) {
            if self.invoke.is_some() {
                return Err(Error::Usage(format!(
                    "`{}` is a shape; --invoke is for module files",
                    self.target
                )));
            }
            let module = shapes::ShapeModule::build(shape, &self.params.params())?;
            let inst = count::instrumented(&module.wasm)?;
            let counts = count::count_shape_once(&module, &inst, module.iters)?;
            (counts, Some(module.iters), None)
        } else {
            let path = std::path::Path::new(&self.target);
            if !path.exists() {
                return Err(Error::Usage(format!(
                    "`{}` is neither a shape (valid: {}) nor a file",
                    self.target,
                    shapes::names().join(", ")
                )));
            }
            let export = self
                .invoke
                .as_deref()
                .ok_or_else(|| Error::Usage("a module file needs --invoke EXPORT".into()))?;
            let (wasm, _) = shapes::user::read_module(path)?;
            let probe = crate::engines::counting::CountingInstance::new(&wasm, None)
                .map_err(|e| Error::Usage(format!("{}: {e}", self.target)))?;
            let (types, _) = probe
                .signature(export)
                .map_err(|e| Error::Usage(e.to_string()))?;
            let args = parse_values(export, &types, &self.args)?;
            let run = count::count_call(&wasm, export, &args, self.fuel)?;
            (run.counts, None, run.stopped)
        };
        self.output
            .exports()?
            .finish(&Document::Counts(results::counts::Counts {
                schema: results::counts::SCHEMA.to_string(),
                target: self.target.clone(),
                invoke: self.invoke.clone(),
                iters,
                per_iter: iters.map(|n| counts.per_iter(n)),
                counts,
                stopped: stopped.clone(),
            }))?;
        if let Some(s) = stopped {
            crate::diag!(
                "error: {} stopped early ({s}); the counts above are what executed up to there",
                self.target
            );
            return Ok(false);
        }
        Ok(true)
    }
}

fn parse_values(
    export: &str,
    types: &[wasmi::ValType],
    args: &[String],
) -> Result<Vec<wasmi::Val>, Error> {
    use wasmi::{Val, ValType};
    if types.len() != args.len() {
        return Err(Error::Usage(format!(
            "export `{export}` takes {} argument(s) {types:?}, got {}",
            types.len(),
            args.len()
        )));
    }
    types
        .iter()
        .zip(args)
        .map(|(t, a)| {
            let bad = || {
                Error::Usage(format!(
                    "argument `{a}` is not a valid {t:?} for `{export}`"
                ))
            };
            Ok(match t {
                ValType::I32 => Val::I32(a.parse().map_err(|_| bad())?),
                ValType::I64 => Val::I64(a.parse().map_err(|_| bad())?),
                ValType::F32 => Val::F32(a.parse::<f32>().map_err(|_| bad())?.into()),
                ValType::F64 => Val::F64(a.parse::<f64>().map_err(|_| bad())?.into()),
                _ => {
                    return Err(Error::Usage(format!(
                        "export `{export}` takes a {t:?}, which the command line cannot pass"
                    )))
                }
            })
        })
        .collect()
}
