//! `loopbench cache`: the worker cache's size, its parts (builds, relinks,
//! source snapshots, shared dependencies) with when each was last used,
//! and pruning by age, count or size.

use crate::error::Error;
use crate::workers::cache::check_root;
use crate::workers::inventory::{self, Part, Policy};
use clap::Args;
use std::time::{Duration, SystemTime};

#[derive(Args, Debug)]
pub struct CacheArgs {
    /// Remove what no session used for this long (`30d`, `12h`).
    #[arg(long, value_name = "PERIOD")]
    pub older_than: Option<String>,
    /// Keep only the N most recently used builds and relinks.
    #[arg(long, value_name = "N")]
    pub keep_last: Option<usize>,
    /// Remove the least recently used parts until the cache fits SIZE (`2g`, `500m`).
    #[arg(long, value_name = "SIZE")]
    pub max_size: Option<String>,
}

fn ago(now: SystemTime, then: SystemTime) -> String {
    if then == SystemTime::UNIX_EPOCH {
        return "never".into();
    }
    let s = now.duration_since(then).unwrap_or_default().as_secs_f64();
    if s < 60.0 {
        "just now".into()
    } else {
        // Minutes are enough for "when was this last used".
        format!(
            "{} ago",
            crate::units::show_period((s / 60.0).round() * 60.0)
        )
    }
}

fn row(now: SystemTime, p: &Part) -> String {
    format!(
        "  {:>11}  {:>14}  {}",
        crate::units::format_bytes(p.bytes),
        ago(now, p.used),
        p.what
    )
}

impl CacheArgs {
    pub fn execute(&self) -> Result<bool, Error> {
        let policy = Policy {
            older_than: match &self.older_than {
                Some(t) => Some(Duration::from_secs_f64(
                    crate::units::parse_period(t)
                        .map_err(|e| Error::Usage(format!("--older-than {e}")))?,
                )),
                None => None,
            },
            keep_last: self.keep_last,
            max_bytes: match &self.max_size {
                Some(s) => Some(
                    crate::units::parse_bytes(s)
                        .map_err(|e| Error::Usage(format!("--max-size: {e}")))?,
                ),
                None => None,
            },
        };
        let limit = inventory::limit()
            .map_err(|e| Error::Usage(format!("{}: {e}", inventory::LIMIT_VAR)))?;
        let root = check_root()?;
        let now = SystemTime::now();
        let pruning =
            policy.older_than.is_some() || policy.keep_last.is_some() || policy.max_bytes.is_some();
        if pruning {
            let pruned = inventory::prune(&root, &policy, now);
            crate::outln!(
                "removed {} part{} ({}) from {}; {} left",
                pruned.removed.len(),
                if pruned.removed.len() == 1 { "" } else { "s" },
                crate::units::format_bytes(pruned.bytes),
                root.display(),
                crate::units::format_bytes(pruned.left)
            );
            for p in &pruned.removed {
                crate::outln!("{}", row(now, p));
            }
            if pruned.in_use > 0 {
                crate::outln!(
                    "left {} part{} a running session uses",
                    pruned.in_use,
                    if pruned.in_use == 1 { "" } else { "s" }
                );
            }
            return Ok(true);
        }
        let mut parts = inventory::list(&root);
        parts.sort_by_key(|p| std::cmp::Reverse(p.used));
        let total: u64 = parts.iter().map(|p| p.bytes).sum();
        crate::outln!(
            "worker cache {}: {} in {} part{} (a session prunes it past {}, {})",
            root.display(),
            crate::units::format_bytes(total),
            parts.len(),
            if parts.len() == 1 { "" } else { "s" },
            crate::units::format_bytes(limit),
            inventory::LIMIT_VAR
        );
        if !parts.is_empty() {
            crate::outln!("  {:>11}  {:>14}  what", "size", "last used");
        }
        for p in &parts {
            crate::outln!("{}", row(now, p));
        }
        Ok(true)
    }
}
