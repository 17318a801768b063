//! The app commands' documents: `app profile` (an app's exact op mix and
//! the shapes that price its hot classes), `app project` (per-primitive
//! prices against the measured apps) and `app warm` (a shape's loop inside
//! a live app instance against a cold one).
//!
//! They are written as they always were (the same fields under the same
//! schema names) and read back into these types, so a saved file renders
//! again in every format. A few values a command has in memory are not in
//! the JSON (the price table, the shapes a profile could not count); a
//! document read back renders without them.

use super::model::EngineModel;
use super::nan;
use super::Session;
use loopbench_count::{Counts, OpClass, PredictorStats};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `app profile`'s document.
pub const PROFILE_SCHEMA: &str = "loopbench-app-profile/1";
/// `app project`'s document (/3 records the `unit`; /2, always time, is
/// still read).
pub const PROJECT_SCHEMA: &str = "loopbench-app-project/3";
/// Projection schemas this version reads.
pub const PROJECT_SCHEMAS_READ: &[&str] = &["loopbench-app-project/2", PROJECT_SCHEMA];
/// `app warm`'s document.
pub const WARM_SCHEMA: &str = "loopbench-app-warm/1";

/// Where an app spends its ops, and which shapes price its hot classes.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AppProfile {
    pub schema: String,
    pub app: String,
    /// Workload steps of the counted `run(steps)`.
    pub steps: u64,
    /// Exact counts of that run, setup excluded.
    pub counts: Counts,
    pub hot_classes: Vec<HotClass>,
    /// The recipe's one-line description (not saved).
    #[serde(skip)]
    pub about: Option<String>,
    /// Shapes the profile could not count, with why (not saved).
    #[serde(skip)]
    pub skipped: Vec<String>,
    /// For a WASI command: the calls of its imports inside the timed
    /// region (the host's work is part of the time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_calls: Option<u64>,
}

/// Classes listed in the profile's "priced by" part: at least this share
/// of the app.
pub const HOT_SHARE: f64 = 0.03;
/// A shape prices a class well when the class is at least this share of
/// the shape's ops; below it the profile says the match is weak.
pub const SHAPE_SHARE: f64 = 0.15;

/// A hot class of the app and the shapes that price it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct HotClass {
    pub class: OpClass,
    pub app_share: f64,
    /// (shape, that class's share of the shape), best first.
    pub priced_by: Vec<(String, f64)>,
}

/// Per-unit prices of one arm, by feature name (see
/// [`crate::model::FEATURES`]).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Prices {
    pub arm: String,
    /// ns per unit, for identifiable features only.
    pub ns: BTreeMap<String, f64>,
    /// Bootstrap replicates of `ns` (same features), for the projection's
    /// interval; empty when the prices came without them.
    #[serde(skip)]
    pub replicates: Vec<BTreeMap<String, f64>>,
}

impl Prices {
    /// The identifiable prices of a model fit.
    pub fn from_model(m: &EngineModel) -> Self {
        let priced = |values: &dyn Fn(usize) -> f64| -> BTreeMap<String, f64> {
            m.prices
                .iter()
                .enumerate()
                .filter(|(_, p)| p.identifiable)
                .map(|(j, p)| (p.feature.to_string(), values(j)))
                .collect()
        };
        Prices {
            arm: m.arm.clone(),
            ns: priced(&|j| m.prices[j].ns),
            replicates: m
                .price_replicates
                .iter()
                .map(|r| priced(&|j| r.get(j).copied().unwrap_or(f64::NAN)))
                .collect(),
        }
    }
}

/// `app project`: the pricing session, the measured apps and, per app,
/// what the prices reproduce and project.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AppProjection {
    pub schema: String,
    /// `ns` (time), or the counter priced under `--price-in`. /2 had none:
    /// always time.
    #[serde(default = "time_unit")]
    pub unit: String,
    pub pricing_session: Session,
    pub app_session: Session,
    /// One per app, in the app session's order.
    pub projections: Vec<AppProjected>,
    /// Every arm's prices, in arm order (not saved: the pricing session
    /// is).
    #[serde(skip)]
    pub prices: Vec<Prices>,
    /// Whether the time was also reproduced from host instructions
    /// (`--instructions-from`; not saved: the rows are).
    #[serde(skip)]
    pub from_instructions: bool,
}

fn time_unit() -> String {
    "ns".into()
}

impl AppProjection {
    /// The counter priced, or `None` for time.
    pub fn counter(&self) -> Option<&str> {
        (self.unit != "ns").then_some(self.unit.as_str())
    }

    /// The projected arms, baseline first: the prices' arms, or for a
    /// document read back the pricing session's arms less its null copy.
    pub fn arms(&self) -> Vec<&str> {
        if !self.prices.is_empty() {
            return self.prices.iter().map(|p| p.arm.as_str()).collect();
        }
        let info = &self.pricing_session.session;
        info.engines
            .iter()
            .map(|e| e.arm.as_str())
            .filter(|a| *a != info.null_arm)
            .collect()
    }
}

/// One app of a projection.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AppProjected {
    pub app: String,
    /// One rep is `run(steps)`.
    pub steps: u64,
    /// The app's feature counts for one rep, named like the model's.
    pub features: BTreeMap<String, f64>,
    /// The simulated branch predictor over one rep (none for a WASI
    /// command: its branches are not traced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predictor: Option<PredictorStats>,
    /// What each measured arm's prices reproduce of its measurement.
    pub coverage: Vec<Coverage>,
    /// The time reproduced from host instructions, per arm that has them
    /// (/2 had none).
    #[serde(default)]
    pub from_instructions: Vec<FromInstructions>,
    /// Every pair of arms (B vs A): projected beside measured.
    pub pairs: Vec<PairProjection>,
}

impl AppProjected {
    /// Executed wasm ops of one rep: the op-class features add up to them
    /// (`operand` holds what `local` and `const` fold away).
    pub fn total_ops(&self) -> u64 {
        self.features
            .iter()
            .filter(|(f, _)| is_class(f))
            .map(|(_, v)| *v)
            .sum::<f64>() as u64
    }
}

/// Instructions are ops (`operand` included); taken branches, bulk bytes
/// and mispredictions are extra dynamic quantities on top of them.
pub fn is_class(feature: &str) -> bool {
    !super::model::EXTRA.contains(&feature)
}

/// Where an arm's prices fall short of an app's measured time: the share
/// they reproduce, and the op classes that carry no time in the model
/// (unpriced, or priced at zero by the fit) ranked by their share of the
/// app's ops. When the share is low, the missing time is in those classes
/// or in effects no feature has (cache misses, dispatch the catalog's loops
/// predict better than the app's code).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Coverage {
    pub arm: String,
    #[serde(deserialize_with = "nan::f64")]
    pub measured_ns: f64,
    #[serde(deserialize_with = "nan::f64")]
    pub reproduced_ns: f64,
    /// `reproduced / measured`.
    #[serde(deserialize_with = "nan::f64")]
    pub share: f64,
    /// (class, share of the app's ops) with no price or a zero price.
    #[serde(deserialize_with = "nan::shares")]
    pub unpriced: Vec<(String, f64)>,
    /// What every op would have to cost on top of its price to close the
    /// gap, if the gap were spread evenly: ns per op.
    #[serde(deserialize_with = "nan::f64")]
    pub gap_ns_per_op: f64,
}

/// One feature's part of the prediction.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Term {
    pub feature: String,
    pub count: f64,
    #[serde(deserialize_with = "nan::f64")]
    pub price_a: f64,
    #[serde(deserialize_with = "nan::f64")]
    pub price_b: f64,
    #[serde(deserialize_with = "nan::f64")]
    pub delta_ns: f64,
}

/// The projection of one pair of arms on one app.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Projection {
    /// Sum of the terms, ns per rep.
    #[serde(deserialize_with = "nan::f64")]
    pub predicted_delta_ns: f64,
    /// The model's reproduction of A's time on the app, ns per rep.
    #[serde(deserialize_with = "nan::f64")]
    pub predicted_a_ns: f64,
    /// Measured median time of A on the app, ns per rep.
    #[serde(deserialize_with = "nan::f64")]
    pub measured_a_ns: f64,
    /// `predicted_delta_ns / measured_a_ns`, in percent.
    #[serde(deserialize_with = "nan::f64")]
    pub predicted_pct: f64,
    /// 95% interval of `predicted_pct` over the prices' bootstrap
    /// replicates (epochs and rounds of the pricing session), when both
    /// arms carry them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_ci_pct: Option<[f64; 2]>,
    /// Terms, largest |delta| first.
    pub terms: Vec<Term>,
    /// Features with counts in the app and no price in one of the arms:
    /// op classes with their share of the app's ops, other features with
    /// NaN (`null` in JSON).
    #[serde(deserialize_with = "nan::shares")]
    pub unpriced: Vec<(String, f64)>,
}

/// B against A on one app: the projected change beside the measured one.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PairProjection {
    pub a: String,
    pub b: String,
    #[serde(deserialize_with = "nan::f64")]
    pub projected_pct: f64,
    pub projected_ci_pct: Option<[f64; 2]>,
    /// The measured change: against the baseline in time, the session's
    /// paired comparison (with its interval); otherwise the ratio of
    /// medians (no interval).
    pub measured_pct: Option<f64>,
    pub measured_ci_pct: Option<[f64; 2]>,
    pub projection: Projection,
}

/// An app's time reproduced from its host instructions and simulated
/// mispredictions, at the shapes' ns per instruction and per misprediction.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FromInstructions {
    pub arm: String,
    pub measured_ns: f64,
    pub instructions: f64,
    pub ns_per_instruction: f64,
    pub mispredicts: u64,
    pub ns_per_mispredict: f64,
    pub reproduced_ns: f64,
    #[serde(deserialize_with = "nan::f64")]
    pub share: f64,
}

/// `app warm`: a shape's loop in a warm app instance, on each engine.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AppWarm {
    pub schema: String,
    pub app: String,
    /// App steps run before the loop in the warm arm.
    pub after: u64,
    pub results: Vec<WarmResult>,
}

/// Outcome of one warm-mode comparison on one engine.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct WarmResult {
    pub engine: String,
    pub shape: String,
    pub iters: u64,
    /// (label, samples ns per iteration, skipped reason)
    pub arms: Vec<(String, Vec<f64>, Option<String>)>,
    pub change: Option<crate::stats::EpochChange>,
    pub null: Option<crate::stats::EpochChange>,
    pub verdict: Option<crate::stats::Verdict>,
    /// Instances created per arm (one per rep, warm-up included).
    pub instances: Vec<usize>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::results::{parse, Document};
    use serde_json::{json, Value};

    fn session() -> Session {
        match parse(include_str!("../../tests/fixtures/schema1/session.json")) {
            Ok(Document::Session(s)) => s,
            other => panic!("the schema 1 fixture: {other:?}"),
        }
    }

    /// A projection of two apps on wasmi and wasm3, with an unpriced
    /// feature (NaN, `null` in JSON) and a row from instructions.
    pub(crate) fn projection() -> AppProjection {
        let app = |name: &str, measured: Option<f64>| {
            let projection = Projection {
                predicted_delta_ns: 600.0,
                predicted_a_ns: 2100.0,
                measured_a_ns: 4000.0,
                predicted_pct: 15.0,
                predicted_ci_pct: Some([10.0, 20.0]),
                terms: vec![Term {
                    feature: "int".into(),
                    count: 1000.0,
                    price_a: 1.0,
                    price_b: 1.5,
                    delta_ns: 500.0,
                }],
                unpriced: vec![("float".into(), 0.25), ("mispredict".into(), f64::NAN)],
            };
            AppProjected {
                app: name.into(),
                steps: 2,
                features: [("int".to_string(), 1000.0), ("float".to_string(), 500.0)].into(),
                predictor: Some(PredictorStats {
                    conditional: 10,
                    multiway: 2,
                    mispredicts: 3,
                    multiway_mispredicts: 1,
                }),
                coverage: vec![Coverage {
                    arm: "wasmi".into(),
                    measured_ns: 4000.0,
                    reproduced_ns: 2100.0,
                    share: 0.525,
                    unpriced: vec![("float".into(), 0.25)],
                    gap_ns_per_op: 0.95,
                }],
                from_instructions: vec![FromInstructions {
                    arm: "wasmi".into(),
                    measured_ns: 4000.0,
                    instructions: 1e6,
                    ns_per_instruction: 0.004,
                    mispredicts: 3,
                    ns_per_mispredict: 2.5,
                    reproduced_ns: 4007.5,
                    share: 4007.5 / 4000.0,
                }],
                pairs: vec![PairProjection {
                    a: "wasmi".into(),
                    b: "wasm3".into(),
                    projected_pct: 15.0,
                    projected_ci_pct: Some([10.0, 20.0]),
                    measured_pct: measured,
                    measured_ci_pct: measured.map(|m| [m - 1.0, m + 1.0]),
                    projection,
                }],
            }
        };
        AppProjection {
            schema: PROJECT_SCHEMA.into(),
            unit: "ns".into(),
            pricing_session: session(),
            app_session: session(),
            projections: vec![app("zlib", Some(9.5)), app("lua", None)],
            prices: Vec::new(),
            from_instructions: true,
        }
    }

    /// The document as `app project` wrote it before it had a type.
    fn as_written_before(d: &AppProjection) -> Value {
        let projections: Vec<Value> = d
            .projections
            .iter()
            .map(|p| {
                let pairs: Vec<Value> = p
                    .pairs
                    .iter()
                    .map(|q| {
                        json!({
                            "a": q.a,
                            "b": q.b,
                            "projected_pct": q.projected_pct,
                            "projected_ci_pct": q.projected_ci_pct,
                            "measured_pct": q.measured_pct,
                            "measured_ci_pct": q.measured_ci_pct,
                            "projection": q.projection,
                        })
                    })
                    .collect();
                let rows: Vec<Value> = p
                    .from_instructions
                    .iter()
                    .map(|r| {
                        json!({
                            "arm": r.arm,
                            "measured_ns": r.measured_ns,
                            "instructions": r.instructions,
                            "ns_per_instruction": r.ns_per_instruction,
                            "mispredicts": r.mispredicts,
                            "ns_per_mispredict": r.ns_per_mispredict,
                            "reproduced_ns": r.reproduced_ns,
                            "share": r.share,
                        })
                    })
                    .collect();
                json!({
                    "app": p.app,
                    "steps": p.steps,
                    "features": p.features,
                    "predictor": p.predictor,
                    "coverage": p.coverage,
                    "from_instructions": rows,
                    "pairs": pairs,
                })
            })
            .collect();
        json!({
            "schema": d.schema,
            "unit": d.unit,
            "pricing_session": d.pricing_session,
            "app_session": d.app_session,
            "projections": projections,
        })
    }

    /// Written, parsed and written again: the same bytes.
    fn reads_back(doc: &Document) -> Document {
        let written = serde_json::to_string_pretty(&doc.to_json_value().unwrap()).unwrap();
        let read = parse(&written).unwrap_or_else(|e| panic!("{e}\n{written}"));
        let again = serde_json::to_string_pretty(&read.to_json_value().unwrap()).unwrap();
        assert_eq!(written, again);
        read
    }

    #[test]
    fn a_projection_is_written_as_before_and_reads_back_equal() {
        let doc = projection();
        assert_eq!(serde_json::to_value(&doc).unwrap(), as_written_before(&doc));
        let Document::AppProject(read) = reads_back(&Document::AppProject(Box::new(doc.clone())))
        else {
            panic!("not a projection")
        };
        // What the JSON holds comes back; the NaN of an unpriced feature
        // too (NaN equals nothing, so it is compared on its own).
        let without_nan = |d: &AppProjection| {
            let mut projections = d.projections.clone();
            let nans: Vec<(String, f64)> = projections
                .iter_mut()
                .map(|p| p.pairs[0].projection.unpriced.remove(1))
                .collect();
            (projections, nans)
        };
        let ((got, nans), (want, _)) = (without_nan(&read), without_nan(&doc));
        assert_eq!(got, want);
        assert!(nans.iter().all(|(f, v)| f == "mispredict" && v.is_nan()));
        assert_eq!(read.unit, "ns");
        assert!(read.prices.is_empty() && !read.from_instructions);
    }

    #[test]
    fn a_projection_of_schema_2_reads_in_time() {
        let mut old = as_written_before(&projection());
        old["schema"] = json!("loopbench-app-project/2");
        old.as_object_mut().unwrap().remove("unit");
        for p in old["projections"].as_array_mut().unwrap() {
            p.as_object_mut().unwrap().remove("from_instructions");
        }
        let Ok(Document::AppProject(read)) = parse(&old.to_string()) else {
            panic!("a /2 projection does not read")
        };
        assert_eq!(read.counter(), None);
        assert!(read.projections[0].from_instructions.is_empty());
    }

    #[test]
    fn a_profile_is_written_as_before_and_reads_back_equal() {
        let mut counts = Counts {
            total_ops: 100,
            taken_branches: 7,
            ..Counts::default()
        };
        counts.classes.insert(OpClass::Load, 60);
        counts.classes.insert(OpClass::Int, 40);
        let doc = AppProfile {
            schema: PROFILE_SCHEMA.into(),
            app: "zlib".into(),
            steps: 2,
            counts,
            hot_classes: vec![HotClass {
                class: OpClass::Load,
                app_share: 0.6,
                priced_by: vec![("load_stream".into(), 0.3)],
            }],
            about: Some("deflate".into()),
            skipped: vec!["shared_store_stream (no threads)".into()],
            host_calls: None,
        };
        assert_eq!(
            serde_json::to_value(&doc).unwrap(),
            json!({
                "schema": doc.schema,
                "app": doc.app,
                "steps": doc.steps,
                "counts": doc.counts,
                "hot_classes": doc.hot_classes,
            })
        );
        let Document::AppProfile(read) = reads_back(&Document::AppProfile(doc.clone())) else {
            panic!("not a profile")
        };
        // All but what is not saved.
        assert_eq!(
            read,
            AppProfile {
                about: None,
                skipped: Vec::new(),
                ..doc
            }
        );
    }

    #[test]
    fn a_warm_document_is_written_as_before_and_reads_back_equal() {
        let cold: Vec<f64> = (0..12).map(|i| 10.0 + (i % 3) as f64 * 0.1).collect();
        let warm: Vec<f64> = cold.iter().map(|v| v * 1.1).collect();
        let compared = crate::stats::compare(
            std::slice::from_ref(&warm),
            std::slice::from_ref(&cold),
            None,
            crate::stats::LEVEL,
        )
        .expect("a comparison");
        let result = WarmResult {
            engine: "wasmi".into(),
            shape: "store_stream".into(),
            iters: 1000,
            arms: vec![
                ("wasmi cold".into(), cold, None),
                ("wasmi warm(1)".into(), warm, None),
                (
                    "wasmi cold#null".into(),
                    Vec::new(),
                    Some("skipped: x".into()),
                ),
            ],
            change: Some(compared.change.clone()),
            null: None,
            verdict: Some(compared.verdict),
            instances: vec![12, 12, 0],
        };
        let doc = AppWarm {
            schema: WARM_SCHEMA.into(),
            app: "zlib".into(),
            after: 1,
            results: vec![result],
        };
        assert_eq!(
            serde_json::to_value(&doc).unwrap(),
            json!({
                "schema": doc.schema,
                "app": doc.app,
                "after": doc.after,
                "results": doc.results,
            })
        );
        let Document::AppWarm(read) = reads_back(&Document::AppWarm(doc.clone())) else {
            panic!("not a warm document")
        };
        assert_eq!(read, doc);
    }
}
