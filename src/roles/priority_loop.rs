//! How a worker polls one stream per priority (highest first): the seed's strict and weighted
//! loops and their corrected forms. A [`Planner`] is pure: it says which `XREADGROUP` comes
//! next given what the last one returned; [`read`] sends one; the handler is the worker's own.
//!
//! The seed's loops block on every stream in turn (`BLOCK 100`, and `BLOCK 5000` on low for
//! the strict one), so a job that arrives on another stream waits for that block to end. The
//! corrected loops read without blocking in priority order and, only when every stream is
//! empty, block once on all of them together, so any arrival wakes the worker.
//!
//! ```text
//! seed-strict      c(10, 100) ─got─► c …   empty ► n(10, 100) ─got─► c …   empty ► l(10, 5000) ► c …
//! seed-weighted    c(10, 100) ► n(5, 100) ► l(1, 100) ► c …            (each BLOCK 100 when empty)
//! one-call         c n l (10 each, BLOCK 5000) ► …                   (every non-empty stream, 1:1:1)
//! probe-then-block c(10) ─got─► c …  empty ► n(10) ─got─► c … empty ► l(10) ─got─► c …
//!                                                     empty ► c n l (1, BLOCK idle) ► c …
//! fixed-weighted   c(10) ► n(5) ► l(1) ► c …   a whole round empty ► c n l (1, BLOCK idle) ► c …
//! ```

use crate::error::{Context, Error};
use crate::fault::{TimeScale, NEVER_BY_THE_CLOCK_MS};
use redis::aio::MultiplexedConnection;
use redis::streams::{StreamId, StreamReadReply};
use serde::{Deserialize, Serialize};

/// `loop = { kind = "seed-strict" }` and the others: which loop a worker runs. Every default
/// is the seed's own figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum LoopSpec {
    /// The seed's strict loop: each stream in priority order with its own BLOCK; after any
    /// entries, back to the highest. Seed: COUNT 10, BLOCK 100 / 100 / 5000.
    SeedStrict {
        #[serde(default = "seed_count")]
        count: u32,
        #[serde(default = "seed_strict_blocks")]
        block_ms: Vec<f64>,
    },
    /// One `XREADGROUP … COUNT count BLOCK block_ms STREAMS critical normal low`, highest
    /// first: the reply holds every non-empty stream, up to COUNT each.
    OneCall {
        #[serde(default = "seed_count")]
        count: u32,
        #[serde(default = "seed_low_block")]
        block_ms: f64,
    },
    /// Strict, corrected: non-blocking reads in priority order (after any entries, back to
    /// the highest); when all are empty, one blocking read over every stream (COUNT 1).
    ProbeThenBlock {
        #[serde(default = "seed_count")]
        count: u32,
        /// BLOCK of the read over every stream: 0 = until something arrives.
        #[serde(default)]
        idle_block_ms: f64,
    },
    /// The seed's weighted loop: each stream in turn, COUNT its weight, BLOCK `block_ms`
    /// each. Seed: weights 10 / 5 / 1, BLOCK 100.
    SeedWeighted {
        #[serde(default = "seed_weights")]
        weights: Vec<u32>,
        #[serde(default = "seed_weighted_block")]
        block_ms: f64,
    },
    /// Weighted, corrected: a round of non-blocking reads, COUNT its weight each; when a whole
    /// round found nothing, one blocking read over every stream (COUNT 1).
    FixedWeighted {
        #[serde(default = "seed_weights")]
        weights: Vec<u32>,
        #[serde(default)]
        idle_block_ms: f64,
    },
}

fn seed_count() -> u32 {
    10
}
fn seed_strict_blocks() -> Vec<f64> {
    vec![100.0, 100.0, 5000.0]
}
fn seed_low_block() -> f64 {
    5000.0
}
fn seed_weights() -> Vec<u32> {
    vec![10, 5, 1]
}
fn seed_weighted_block() -> f64 {
    100.0
}

impl LoopSpec {
    /// The loop's name as a scenario writes it.
    pub fn name(&self) -> &'static str {
        match self {
            LoopSpec::SeedStrict { .. } => "seed-strict",
            LoopSpec::OneCall { .. } => "one-call",
            LoopSpec::ProbeThenBlock { .. } => "probe-then-block",
            LoopSpec::SeedWeighted { .. } => "seed-weighted",
            LoopSpec::FixedWeighted { .. } => "fixed-weighted",
        }
    }

    /// Rules the types cannot express for `streams` streams: one line naming the key.
    pub fn validate(&self, streams: usize) -> Result<(), String> {
        let per_stream = |what: &str, n: usize| {
            if n == streams {
                Ok(())
            } else {
                Err(format!("setup.loop.{what} has {n} values: give one per stream ({streams})"))
            }
        };
        let non_negative = |ms: f64| ms.is_finite() && ms >= 0.0;
        match self {
            LoopSpec::SeedStrict { count, block_ms } => {
                per_stream("block_ms", block_ms.len())?;
                check_count(*count)?;
                if !block_ms.iter().all(|b| non_negative(*b)) {
                    return Err("setup.loop.block_ms: use durations ≥ 0 in ms".into());
                }
            }
            LoopSpec::OneCall { count, block_ms } => {
                check_count(*count)?;
                if !non_negative(*block_ms) {
                    return Err("setup.loop.block_ms: use a duration ≥ 0 in ms".into());
                }
            }
            LoopSpec::ProbeThenBlock { count, idle_block_ms } => {
                check_count(*count)?;
                if !non_negative(*idle_block_ms) {
                    return Err(
                        "setup.loop.idle_block_ms: use a duration ≥ 0 in ms (0 = until something arrives)".into()
                    );
                }
            }
            LoopSpec::SeedWeighted { weights, .. } | LoopSpec::FixedWeighted { weights, .. } => {
                per_stream("weights", weights.len())?;
                if weights.contains(&0) {
                    return Err("setup.loop.weights: use weights ≥ 1".into());
                }
            }
        }
        Ok(())
    }

    /// The most entries one of its reads asks of a stream (its COUNT, or its largest weight).
    pub fn largest_count(&self) -> u32 {
        match self {
            LoopSpec::SeedStrict { count, .. }
            | LoopSpec::OneCall { count, .. }
            | LoopSpec::ProbeThenBlock { count, .. } => *count,
            LoopSpec::SeedWeighted { weights, .. } | LoopSpec::FixedWeighted { weights, .. } => {
                weights.iter().copied().max().unwrap_or(1)
            }
        }
    }

    /// Does the loop block on one stream at a time, so an arrival elsewhere waits?
    pub fn blocks_per_stream(&self) -> bool {
        matches!(self, LoopSpec::SeedStrict { .. } | LoopSpec::SeedWeighted { .. })
    }
}

fn check_count(count: u32) -> Result<(), String> {
    if count == 0 {
        return Err("setup.loop.count = 0: use at least 1".into());
    }
    Ok(())
}

/// How long a read may wait for entries.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Block {
    /// No BLOCK: return at once.
    No,
    /// `BLOCK <ms>` (before the time scale).
    Ms(f64),
    /// `BLOCK 0`: until something arrives.
    Forever,
}

impl Block {
    /// The BLOCK argument at `scale`, if any: a positive wait never becomes `BLOCK 0`
    /// (which would mean forever).
    pub fn arg(self, scale: TimeScale) -> Option<u64> {
        match self {
            Block::No => None,
            Block::Forever => Some(0),
            Block::Ms(ms) if ms <= 0.0 => Some(0),
            Block::Ms(ms) => Some((ms * scale.0).ceil().max(1.0) as u64),
        }
    }

    /// The BLOCK argument under the explorer: a wait with a time limit lasts until a timer
    /// step ends it ([`NEVER_BY_THE_CLOCK_MS`]); the others as at any scale.
    pub fn arg_explored(self) -> Option<u64> {
        match self {
            Block::Ms(ms) if ms > 0.0 => Some(NEVER_BY_THE_CLOCK_MS),
            other => other.arg(TimeScale(1.0)),
        }
    }

    fn idle(ms: f64) -> Block {
        if ms > 0.0 {
            Block::Ms(ms)
        } else {
            Block::Forever
        }
    }
}

/// One `XREADGROUP`: which streams (indices, highest priority first), COUNT, BLOCK.
#[derive(Clone, Debug, PartialEq)]
pub struct Read {
    pub streams: Vec<usize>,
    pub count: u32,
    pub block: Block,
}

/// Where a loop is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// About to read stream `i` alone.
    At(usize),
    /// About to block once on every stream.
    AllBlocking,
}

/// A loop as a state machine: [`Planner::next`] is the read to send, [`Planner::got`] is
/// told how many entries each stream gave.
#[derive(Clone, Debug)]
pub struct Planner {
    spec: LoopSpec,
    streams: usize,
    step: Step,
    /// Entries the current weighted round has got so far.
    round_total: u32,
}

impl Planner {
    /// A planner for `streams` streams (validated with [`LoopSpec::validate`]).
    pub fn new(spec: LoopSpec, streams: usize) -> Planner {
        Planner { spec, streams, step: Step::At(0), round_total: 0 }
    }

    pub fn spec(&self) -> &LoopSpec {
        &self.spec
    }

    /// The read to send now.
    pub fn next(&self) -> Read {
        let all: Vec<usize> = (0..self.streams).collect();
        let one = |i: usize, count: u32, block: Block| Read { streams: vec![i], count, block };
        match (&self.spec, self.step) {
            (LoopSpec::OneCall { count, block_ms }, _) => {
                Read { streams: all, count: *count, block: Block::Ms(*block_ms) }
            }
            (LoopSpec::SeedStrict { count, block_ms }, Step::At(i)) => one(i, *count, Block::Ms(block_ms[i])),
            (LoopSpec::SeedWeighted { weights, block_ms }, Step::At(i)) => one(i, weights[i], Block::Ms(*block_ms)),
            (LoopSpec::ProbeThenBlock { count, .. }, Step::At(i)) => one(i, *count, Block::No),
            (LoopSpec::FixedWeighted { weights, .. }, Step::At(i)) => one(i, weights[i], Block::No),
            (
                LoopSpec::ProbeThenBlock { idle_block_ms, .. } | LoopSpec::FixedWeighted { idle_block_ms, .. },
                Step::AllBlocking,
            ) => Read { streams: all, count: 1, block: Block::idle(*idle_block_ms) },
            (LoopSpec::SeedStrict { .. } | LoopSpec::SeedWeighted { .. }, Step::AllBlocking) => {
                unreachable!("the seed's loops never block on every stream")
            }
        }
    }

    /// The last read returned `per_stream[i]` entries from stream `i`.
    pub fn got(&mut self, per_stream: &[u32]) {
        let total: u32 = per_stream.iter().sum();
        let last = self.streams - 1;
        self.step = match (&self.spec, self.step) {
            (LoopSpec::OneCall { .. }, step) => step,
            (LoopSpec::SeedStrict { .. }, Step::At(i)) => Step::At(if total > 0 || i == last { 0 } else { i + 1 }),
            (LoopSpec::SeedWeighted { .. }, Step::At(i)) => Step::At(if i == last { 0 } else { i + 1 }),
            (LoopSpec::ProbeThenBlock { .. }, Step::At(i)) => match (total > 0, i == last) {
                (true, _) => Step::At(0),
                (false, true) => Step::AllBlocking,
                (false, false) => Step::At(i + 1),
            },
            (LoopSpec::FixedWeighted { .. }, Step::At(i)) => {
                self.round_total += total;
                match (i == last, self.round_total > 0) {
                    (false, _) => Step::At(i + 1),
                    (true, true) => Step::At(0),
                    (true, false) => Step::AllBlocking,
                }
            }
            (_, Step::AllBlocking) => Step::At(0),
        };
        if self.step == Step::At(0) {
            self.round_total = 0;
        }
    }
}

/// Entries per stream index, for [`Planner::got`].
pub fn per_stream(entries: &[(usize, StreamId)], streams: usize) -> Vec<u32> {
    let mut counts = vec![0; streams];
    for (i, _) in entries {
        counts[*i] += 1;
    }
    counts
}

/// Send `read` as `consumer` of `group` over `streams` (names, highest priority first) and
/// return its entries, each with its stream's index, in the reply's order.
pub async fn read(
    conn: &mut MultiplexedConnection,
    group: &str,
    consumer: &str,
    streams: &[String],
    read: &Read,
    block: Option<u64>,
) -> Result<Vec<(usize, StreamId)>, Error> {
    let mut cmd = redis::cmd("XREADGROUP");
    cmd.arg("GROUP").arg(group).arg(consumer).arg("COUNT").arg(read.count);
    if let Some(ms) = block {
        cmd.arg("BLOCK").arg(ms);
    }
    cmd.arg("STREAMS");
    for i in &read.streams {
        cmd.arg(&streams[*i]);
    }
    for _ in &read.streams {
        cmd.arg(">");
    }
    let reply: Option<StreamReadReply> = cmd.query_async(conn).await.context("XREADGROUP")?;
    let mut out = Vec::new();
    for key in reply.unwrap_or_default().keys {
        let Some(i) = streams.iter().position(|s| *s == key.key) else { continue };
        out.extend(key.ids.into_iter().map(|id| (i, id)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(toml_text: &str) -> LoopSpec {
        toml::from_str(toml_text).unwrap()
    }

    /// The reads a planner sends when stream i holds `backlog[i]` entries and nothing arrives,
    /// each with what it got per stream.
    fn run(spec: LoopSpec, backlog: [u32; 3], reads: usize) -> Vec<(Read, [u32; 3])> {
        let mut p = Planner::new(spec, 3);
        let mut left = backlog;
        let mut out = Vec::new();
        for _ in 0..reads {
            let r = p.next();
            let mut got = [0; 3];
            for &i in &r.streams {
                got[i] = left[i].min(r.count);
                left[i] -= got[i];
            }
            p.got(&got);
            out.push((r, got));
        }
        out
    }

    fn trace(spec: LoopSpec, backlog: [u32; 3], reads: usize) -> Vec<Read> {
        run(spec, backlog, reads).into_iter().map(|(r, _)| r).collect()
    }

    fn shape(reads: &[Read]) -> Vec<String> {
        reads
            .iter()
            .map(|r| {
                let s: String = r.streams.iter().map(|i| ["c", "n", "l"][*i]).collect();
                let b = match r.block {
                    Block::No => String::new(),
                    Block::Ms(ms) => format!(" {ms}"),
                    Block::Forever => " ∞".into(),
                };
                format!("{s}{}{b}", r.count)
            })
            .collect()
    }

    #[test]
    fn defaults_are_the_seeds_figures() {
        assert_eq!(
            spec(r#"kind = "seed-strict""#),
            LoopSpec::SeedStrict { count: 10, block_ms: vec![100.0, 100.0, 5000.0] }
        );
        assert_eq!(
            spec(r#"kind = "seed-weighted""#),
            LoopSpec::SeedWeighted { weights: vec![10, 5, 1], block_ms: 100.0 }
        );
        assert!(toml::from_str::<LoopSpec>("kind = \"seed-strict\"\ncoutn = 3").is_err(), "unknown keys are refused");
        assert_eq!(spec(r#"kind = "seed-strict""#).validate(3), Ok(()));
        let two = LoopSpec::SeedWeighted { weights: vec![10, 5], block_ms: 100.0 };
        assert_eq!(two.validate(3), Err("setup.loop.weights has 2 values: give one per stream (3)".into()));
    }

    #[test]
    fn seed_strict_goes_back_to_critical_after_any_entries_and_blocks_5000_on_low() {
        // 15 critical, 1 low: two critical reads, an empty one (BLOCK 100), normal empty
        // (BLOCK 100), low (gets its entry), back to critical; then the idle cycle.
        let reads = trace(spec(r#"kind = "seed-strict""#), [15, 0, 1], 8);
        assert_eq!(
            shape(&reads),
            ["c10 100", "c10 100", "c10 100", "n10 100", "l10 5000", "c10 100", "n10 100", "l10 5000"]
        );
    }

    #[test]
    fn one_call_reads_every_stream_every_time() {
        let reads = trace(spec(r#"kind = "one-call""#), [30, 0, 30], 2);
        assert_eq!(shape(&reads), ["cnl10 5000", "cnl10 5000"]);
    }

    #[test]
    fn probe_then_block_never_blocks_while_anything_waits() {
        let reads = trace(spec(r#"kind = "probe-then-block""#), [10, 0, 2], 7);
        assert_eq!(shape(&reads), ["c10", "c10", "n10", "l10", "c10", "n10", "l10"]);
        let idle = trace(spec(r#"kind = "probe-then-block""#), [0, 0, 0], 5);
        assert_eq!(shape(&idle), ["c10", "n10", "l10", "cnl1 ∞", "c10"]);
    }

    #[test]
    fn seed_weighted_reads_10_5_1_and_blocks_on_every_empty_stream() {
        let reads = trace(spec(r#"kind = "seed-weighted""#), [20, 10, 2], 6);
        assert_eq!(shape(&reads), ["c10 100", "n5 100", "l1 100", "c10 100", "n5 100", "l1 100"]);
    }

    #[test]
    fn fixed_weighted_blocks_on_every_stream_only_after_an_empty_round() {
        let reads = trace(spec(r#"kind = "fixed-weighted""#), [10, 0, 1], 8);
        // Round 1 finds entries, round 2 finds none: then one blocking read over all three.
        assert_eq!(shape(&reads), ["c10", "n5", "l1", "c10", "n5", "l1", "cnl1 ∞", "c10"]);
        let timed = spec("kind = \"fixed-weighted\"\nidle_block_ms = 250");
        assert_eq!(shape(&trace(timed, [0, 0, 0], 4)), ["c10", "n5", "l1", "cnl1 250"]);
    }

    #[test]
    fn served_counts_per_round_are_10_5_1_while_all_are_backlogged() {
        for kind in ["seed-weighted", "fixed-weighted"] {
            // 9 rounds of 27 reads, with more of every stream than they take.
            let reads = run(spec(&format!("kind = \"{kind}\"")), [200, 100, 20], 27);
            let mut served = [0u32; 3];
            for (_, got) in &reads {
                (0..3).for_each(|i| served[i] += got[i]);
            }
            assert_eq!(served, [90, 45, 9], "{kind}");
        }
    }

    #[test]
    fn a_scaled_block_never_becomes_forever() {
        assert_eq!(Block::Ms(100.0).arg(TimeScale(0.001)), Some(1));
        assert_eq!(Block::Ms(5000.0).arg(TimeScale(0.2)), Some(1000));
        assert_eq!(Block::Forever.arg(TimeScale(0.2)), Some(0));
        assert_eq!(Block::No.arg(TimeScale(1.0)), None);
    }
}
