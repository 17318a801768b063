//! Reading the per-rep CSV that `loopbench run --csv` writes, plain or
//! gzipped (told by its first two bytes, not its name).
//!
//! Only the columns a replay needs are read (session, epoch, round, shape,
//! arm, role and the metric's column); the rest may be there or not. A rep
//! whose metric cell is empty (a value that was not read) or not a positive
//! time is left out, so its round pairs with nothing.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::error::{ReplayError, REQUIRED};

/// An arm of one shape, as the CSV names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArmInfo {
    pub name: String,
    /// `baseline`, `null` or `candidate`.
    pub role: String,
}

/// Where a rep sits: the session (index into [`Recorded::sessions`]), its
/// epoch and its round.
pub type RoundKey = (usize, u64, u64);

/// One shape's reps: per round, the metric of each arm (index into `arms`).
#[derive(Clone, Debug)]
pub struct ShapeReps {
    pub shape: String,
    pub arms: Vec<ArmInfo>,
    pub rounds: BTreeMap<RoundKey, Vec<Option<f64>>>,
}

impl ShapeReps {
    /// The arms of `role`.
    pub fn with_role(&self, role: &str) -> Vec<usize> {
        (0..self.arms.len())
            .filter(|&i| self.arms[i].role == role)
            .collect()
    }

    /// Per epoch (session and epoch, in order), the `(a, b)` pairs of the
    /// rounds where both arms have a rep, in round order; epochs without
    /// one are left out.
    pub fn paired(&self, a: usize, b: usize) -> Vec<Vec<(f64, f64)>> {
        let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
        let mut last: Option<(usize, u64)> = None;
        for (&(s, e, _), values) in &self.rounds {
            let (Some(Some(x)), Some(Some(y))) = (values.get(a), values.get(b)) else {
                continue;
            };
            if last != Some((s, e)) {
                out.push(Vec::new());
                last = Some((s, e));
            }
            if let Some(epoch) = out.last_mut() {
                epoch.push((*x, *y));
            }
        }
        out
    }
}

/// A whole per-rep CSV.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub path: PathBuf,
    /// The metric column read (`ns` or `cpu_ns`).
    pub metric: String,
    /// Session ids, in the order they first appear.
    pub sessions: Vec<String>,
    /// Shapes, in the order they first appear.
    pub shapes: Vec<ShapeReps>,
}

/// The metric columns a replay can read.
pub const METRICS: &[&str] = &["ns", "cpu_ns"];

/// Read the per-rep CSV at `path`, timing by the column `metric`.
pub fn read(path: &Path, metric: &str) -> Result<Recorded, ReplayError> {
    let open = |source| ReplayError::Open {
        path: path.to_path_buf(),
        source,
    };
    let file = crate::input::open(path).map_err(open)?;
    let mut buf = BufReader::new(file);
    let gzip = buf.fill_buf().map_err(open)?.starts_with(&[0x1f, 0x8b]);
    let input: Box<dyn Read> = if gzip {
        Box::new(flate2::bufread::MultiGzDecoder::new(buf))
    } else {
        Box::new(buf)
    };
    parse(path, input, metric)
}

fn parse(path: &Path, input: impl Read, metric: &str) -> Result<Recorded, ReplayError> {
    let csv_err = |source| ReplayError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = csv::ReaderBuilder::new().from_reader(input);
    let header = reader.headers().map_err(csv_err)?.clone();
    let needs: Vec<&str> = REQUIRED.iter().copied().chain([metric]).collect();
    let missing: Vec<String> = needs
        .iter()
        .filter(|n| !header.iter().any(|h| h == **n))
        .map(|n| n.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(ReplayError::MissingColumns {
            path: path.to_path_buf(),
            missing,
            needs: needs.iter().map(|n| n.to_string()).collect(),
        });
    }
    let col = |name: &str| header.iter().position(|h| h == name).unwrap_or(0);
    let [session_c, epoch_c, round_c, shape_c, arm_c, role_c, metric_c] =
        ["session", "epoch", "round", "shape", "arm", "role", metric].map(col);

    let mut rec = Recorded {
        path: path.to_path_buf(),
        metric: metric.to_string(),
        sessions: Vec::new(),
        shapes: Vec::new(),
    };
    let mut row = csv::StringRecord::new();
    while reader.read_record(&mut row).map_err(csv_err)? {
        let line = row.position().map_or(0, |p| p.line());
        let cell = |c: usize| row.get(c).unwrap_or("");
        let bad = |c: usize, column: &str| ReplayError::BadValue {
            path: path.to_path_buf(),
            line,
            column: column.to_string(),
            value: cell(c).to_string(),
        };
        let int = |c: usize, column: &str| cell(c).parse::<u64>().map_err(|_| bad(c, column));
        let (epoch, round) = (int(epoch_c, "epoch")?, int(round_c, "round")?);
        let (shape, arm, role) = (cell(shape_c), cell(arm_c), cell(role_c));
        if !matches!(role, "baseline" | "null" | "candidate") {
            return Err(bad(role_c, "role"));
        }
        if shape.is_empty() {
            return Err(bad(shape_c, "shape"));
        }
        if arm.is_empty() {
            return Err(bad(arm_c, "arm"));
        }
        let value = match cell(metric_c) {
            "" => None,
            text => {
                // A time no clock gives is refused, not skipped; 0 (a CPU
                // clock's coarse tick) is a rep without a reading.
                let v: f64 = text.parse().map_err(|_| bad(metric_c, metric))?;
                if !(0.0..=crate::units::MAX_NS).contains(&v) {
                    return Err(bad(metric_c, metric));
                }
                (v > 0.0).then_some(v)
            }
        };
        let session = match rec.sessions.iter().position(|s| s == cell(session_c)) {
            Some(i) => i,
            None => {
                rec.sessions.push(cell(session_c).to_string());
                rec.sessions.len() - 1
            }
        };
        let s = match rec.shapes.iter().position(|s| s.shape == shape) {
            Some(i) => i,
            None => {
                rec.shapes.push(ShapeReps {
                    shape: shape.to_string(),
                    arms: Vec::new(),
                    rounds: BTreeMap::new(),
                });
                rec.shapes.len() - 1
            }
        };
        let reps = &mut rec.shapes[s];
        let a = match reps.arms.iter().position(|x| x.name == arm) {
            Some(i) => i,
            None => {
                reps.arms.push(ArmInfo {
                    name: arm.to_string(),
                    role: role.to_string(),
                });
                reps.arms.len() - 1
            }
        };
        if reps.arms[a].role != role {
            return Err(bad(role_c, "role"));
        }
        let slots = reps.rounds.entry((session, epoch, round)).or_default();
        if slots.len() <= a {
            slots.resize(a + 1, None);
        }
        if slots[a].is_some() {
            return Err(ReplayError::DuplicateRep {
                path: path.to_path_buf(),
                line,
                shape: shape.to_string(),
                arm: arm.to_string(),
                epoch,
                round,
            });
        }
        // A rep without a value stays empty (and pairs with nothing).
        slots[a] = value;
    }
    if rec.shapes.is_empty() {
        return Err(ReplayError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "session,epoch,round,slot,shape,arm,role,iterations,ns,cpu_ns,tsc_cycles,involuntary_switches,preempted\n";

    fn parse_str(text: &str) -> Result<Recorded, ReplayError> {
        parse(Path::new("t.csv"), text.as_bytes(), "ns")
    }

    #[test]
    fn rounds_pair_by_epoch_and_round() {
        let text = format!(
            "{HEAD}s,0,0,0,a,w,baseline,1,100,,,0,false\n\
             s,0,0,1,a,w#null,null,1,110,,,0,false\n\
             s,0,1,1,a,w,baseline,1,200,,,0,false\n\
             s,0,1,0,a,w#null,null,1,190,,,0,false\n\
             s,1,0,0,a,w#null,null,1,50,,,0,false\n\
             s,1,0,1,a,w,baseline,1,,,,0,false\n\
             s,2,0,0,a,w,baseline,1,70,,,0,false\n\
             s,2,0,1,a,w#null,null,1,77,,,0,false\n"
        );
        let r = parse_str(&text).unwrap();
        assert_eq!(r.sessions, ["s"]);
        let a = &r.shapes[0];
        assert_eq!(
            (a.with_role("baseline"), a.with_role("null")),
            (vec![0], vec![1])
        );
        // Epoch 1 has no baseline value: left out.
        assert_eq!(
            a.paired(1, 0),
            vec![vec![(110.0, 100.0), (190.0, 200.0)], vec![(77.0, 70.0)]]
        );
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let e = parse_str("session,epoch,shape\ns,0,a\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "t.csv: not a per-rep CSV of `loopbench run --csv`: no column round, arm, role, ns \
             (needs session, epoch, round, shape, arm, role, ns)"
        );
        let e = parse_str(&format!("{HEAD}s,x,0,0,a,w,baseline,1,100,,,0,false\n"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "t.csv, line 2: bad epoch `x`");
        let e = parse_str(&format!("{HEAD}s,0,0,0,a,w,boss,1,100,,,0,false\n"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "t.csv, line 2: bad role `boss`");
        let e = parse_str(&format!(
            "{HEAD}s,0,0,0,a,w,baseline,1,100,,,0,false\ns,0,0,0,a,w,baseline,1,101,,,0,false\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("line 3: a second w rep for shape a, epoch 0, round 0"),
            "{e}"
        );
        assert_eq!(
            parse_str(HEAD).unwrap_err().to_string(),
            "t.csv: no timed reps"
        );
        // Issue 53.18: a time no clock gives is refused, not left out.
        for ns in ["-5", "NaN", "inf", "1e308"] {
            let e = parse_str(&format!("{HEAD}s,0,0,0,a,w,baseline,1,{ns},,,0,false\n"))
                .unwrap_err()
                .to_string();
            assert_eq!(e, format!("t.csv, line 2: bad ns `{ns}`"));
        }
    }
}
