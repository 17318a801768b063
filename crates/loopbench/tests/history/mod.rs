//! History, trends and the fleet, on real databases: SQLite files and a
//! private PostgreSQL server per test.

/// Across sessions on the recorded A/A sessions of a noisy VM: compare's
/// three outcomes and between-session term, anchored compare, the gate,
/// trend's false flags.
mod across;
/// Bisect over git repositories of mock costs: the search, unsure when
/// costs are equal, resuming on SQLite and PostgreSQL, refusals.
mod bisect;
/// Which databases loopbench opens and how: typos, foreign files,
/// duplicates, servers that never answer.
mod databases;
/// Agents on PostgreSQL: six jobs on two agents; an agent killed mid-job;
/// hostile jobs refused; a server restart mid-job.
mod fleet;
/// Issue 26's hostile and broken inputs on the history and the fleet:
/// FIFOs, devices, read-only directories, odd job rows and stored names.
mod hostile;
/// The leaderboard's layout spread per arm, and the mark on a change
/// smaller than it, on SQLite and PostgreSQL.
mod leaderboard;
/// A private PostgreSQL server.
mod pg;
/// The same store tests on SQLite and on PostgreSQL.
mod store;
/// Tracks: alerts once per flagged change (also after an agent killed
/// mid-job), one scheduled job per period and label, resumed runs, errors.
mod track;
/// Trend: an injected step change is flagged once, a flat series is not.
mod trend;
mod util;
