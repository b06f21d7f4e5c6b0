//! What every lab procedure provides. A procedure is a spec parsed from a scenario's
//! `[setup]` (its own keys, `kind = "…"` picks it) that can run once on the servers, judge
//! what a run recorded, and describe itself and its runs in both languages.
//!
//! A new lab kind implements three traits on its spec: [`LabProcedure`] (what runs on the
//! servers), [`Judge`] (pure: the verdict, final state and typed [`Facts`] of a recorded run)
//! and [`Present`] (its words, lines and charts, with [`TimelineDisplay`] choices); the
//! compiler lists what is missing, and `lab_kinds!` in `labs.rs` then wires it in with one line.

use super::RunContext;
use crate::chart::Chart;
use crate::checker::fates::Intended;
use crate::checker::RunVerdict;
use crate::error::Error;
use crate::lang::{Lang, Words};
use crate::timeline::{Event, RawEvent};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A lab kind: its spec is `Self`. What runs on the servers is here; what judges a recorded
/// run is [`Judge`] and how it reads in a report is [`Present`].
#[allow(async_fn_in_trait)] // The orchestrator's runtime is single-threaded: no Send bound needed.
pub trait LabProcedure: Judge + Present {
    /// Rules the types cannot express, checked before any server starts. The message is one
    /// line naming the key and the fix (`setup.consumers = 0: use at least 1`).
    fn validate(&mut self) -> Result<(), String>;

    /// Run once on the servers and report what happened.
    async fn run(&self, ctx: &mut RunContext<'_>) -> Result<RunOutcome<Self::Observed>, Error>;

    /// What the lab needs from the servers beyond the shared Redis and PostgreSQL, checked
    /// before anything starts (default: nothing more).
    fn needs(&self) -> Needs {
        Needs::default()
    }

    /// What this server lacks to run the lab, in one line naming it and the version that has
    /// it (`needs Redis ≥ 8.6 (XADD … IDMP); this server is 7.0.15`); None to run (default).
    fn missing(&self, _server: &crate::service::ServerInfo) -> Option<String> {
        None
    }

    /// Can `explore` step this lab's processes one command at a time? Err: one line saying
    /// why not (default: the kind does not route its processes through the interposer yet).
    fn explorable(&self) -> Result<(), String> {
        Err("this kind's processes are not stepped by the explorer yet (they do not talk to the servers through the interposer)".into())
    }
}

/// What a lab kind reads from a recorded run: pure functions of the spec and the run, so
/// `ordlab check` can re-judge a saved run without servers.
pub trait Judge: Clone + fmt::Debug + PartialEq + Serialize + DeserializeOwned {
    /// What one run observed on the servers: the final state the judge reads.
    type Observed: Clone + fmt::Debug + PartialEq + Serialize + DeserializeOwned;

    /// What one run measured (on the servers or in its timeline), field by field.
    type Facts: Facts;

    /// The verdict of a recorded run.
    fn judge(&self, run: &RunView<'_, Self::Observed>) -> RunVerdict;

    /// The state a run ended in, item by item (an order's status, a count), with what each
    /// should have been.
    fn final_state(&self, observed: &Self::Observed) -> Vec<FinalItem>;

    /// What the run measured.
    fn facts(&self, run: &RunView<'_, Self::Observed>) -> Self::Facts;

    /// The faults a run declares (its scenario's, and those its workload drew for the run),
    /// each of which must fire: one that never did makes the run unknown (default: none).
    fn faults(&self, _observed: &Self::Observed) -> Vec<crate::fault::Fault> {
        Vec::new()
    }

    /// The events the lab means to deliver, for the fates checker (`checker::fates`: applied,
    /// dropped, lost, out of order). None where nothing is delivered through a queue (default).
    fn intended(&self) -> Option<Vec<Intended>> {
        None
    }

    /// The ideal length of a run in ms given only its injected delays (each consumer does its
    /// work back to back, no job before its publish time): what `ordlab bench` divides the
    /// wall time by. None where the lab injects no handler work (default).
    fn critical_path_ms(&self, _events: &[Event], _scale: f64) -> Option<f64> {
        None
    }
}

/// How a lab kind and its runs read in a report, in both languages. Only the three sentences
/// about the set-up are required; everything else defaults to nothing.
pub trait Present: Judge {
    /// The set-up in one line, derived from the spec so an edited scenario describes itself.
    fn describe(&self, lang: Lang) -> String;

    /// The approach in a few words, for the SUMMARY table (English).
    fn approach(&self) -> String;

    /// What makes a run wrong, after "→ wrong": `final state (not paid)`.
    fn wrong_means(&self, lang: Lang) -> String;

    /// How the run's timeline is shown (default: [`TimelineDisplay::default`]).
    fn timeline(&self) -> TimelineDisplay {
        TimelineDisplay::default()
    }

    /// A heading for the run's timeline and lines after it (default: none).
    fn notes(&self, _run: &RunView<'_, Self::Observed>, _lang: Lang) -> RunNotes {
        RunNotes::default()
    }

    /// Lines about every run of the variant, printed after the final states (default: none).
    fn per_run_lines(&self, _runs: &[RunView<'_, Self::Observed>], _lang: Lang) -> Vec<Line> {
        Vec::new()
    }

    /// A sentence about the variant's runs for the SUMMARY table (English; default none).
    fn summary_note(&self, _runs: &[RunView<'_, Self::Observed>]) -> Option<String> {
        None
    }

    /// Run 1's row in a table that compares the lab's variants side by side: (column, cell)
    /// pairs (default: none; the table appears when two or more variants give a row).
    fn table_row(&self, _run: &RunView<'_, Self::Observed>, _lang: Lang) -> Option<Vec<(String, Line)>> {
        None
    }

    /// Charts of this variant's runs, where numbers are easier seen than read (default:
    /// none). A pure function of the runs, so saved runs are drawn again without servers.
    fn charts(&self, _runs: &[RunView<'_, Self::Observed>]) -> Vec<Chart> {
        Vec::new()
    }

    /// Charts that compare the lab's variants of this kind side by side, for example
    /// throughput per strategy (default: none).
    fn compare(_variants: &[VariantRuns<'_, Self>]) -> Vec<Chart>
    where
        Self: Sized,
    {
        Vec::new()
    }
}

/// How a run's timeline is shown; every choice is off by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimelineDisplay {
    /// The text timeline shows publish attempts: only where publishing has a schedule or
    /// faults worth seeing, as in the seed's output.
    pub shows_publishing: bool,
    /// The lab has several orders (timeline lines then name the order).
    pub many_orders: bool,
    /// The lab's processes run side by side with no order between them beyond publish →
    /// receive (a dispatcher crashing while a consumer applies what it published). A
    /// snapshot then lists the timeline process by process, as for a scheduler race, since
    /// the interleaving across processes differs from run to run.
    pub processes_interleave_freely: bool,
    /// In a scheduler-race variant, each process's own sequence of lines is the same in every
    /// run (only the interleaving across processes varies). A snapshot then lists the
    /// timeline process by process instead of leaving it out.
    pub per_process_stable: bool,
    /// The kind reads its worker's wire records into events of its own (a priority worker's
    /// reads and acks): the text timeline shows those, and leaves the records (hundreds of
    /// polls, as many as the timing allows) to the JSON.
    pub wire_read_as_kind_events: bool,
    /// A long timeline shows the lines around each crash and each side effect, not only its
    /// start and end: a library's own chatter (heartbeats, registry cleanups) runs to hundreds
    /// of lines, and the fault sits in the middle.
    pub focus_on_faults: bool,
}

/// A kind's measurements of one run: a struct with one field per figure, turned into
/// `name=value` rows only to be printed.
pub trait Facts: Clone + fmt::Debug + PartialEq + Serialize + DeserializeOwned {
    /// The figures in print order, each with whether a snapshot keeps it.
    fn rows(&self) -> Vec<FactRow>;
}

/// The facts of a kind that measures nothing beyond its final state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoFacts;

impl Facts for NoFacts {
    fn rows(&self) -> Vec<FactRow> {
        Vec::new()
    }
}

/// What a lab needs beyond the shared Redis and PostgreSQL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// A Redis Cluster: the lab's own, or with `--backend external` the user's
    /// (`--redis-cluster-url`).
    pub cluster: bool,
    /// Why it cannot run against the user's servers (`--backend external`), if it cannot:
    /// it would change them.
    pub not_external: Option<&'static str>,
    /// The command line of the lab's workers from `setup.worker`, if it has them: its program
    /// must be found before any server starts.
    pub worker_command: Option<Vec<String>>,
}

/// What a procedure's run returns, before the runner judges it.
pub struct RunOutcome<O> {
    /// t=0 of the run on the monotonic clock (the producer's start).
    pub t0_ns: u64,
    /// Every event, as the processes stamped them.
    pub raw: Vec<RawEvent>,
    /// The run hit its deadline before it finished.
    pub timed_out: bool,
    pub observed: O,
}

/// A recorded run as a procedure reads it.
pub struct RunView<'a, O> {
    pub run: u32,
    pub events: &'a [Event],
    pub timed_out: bool,
    pub observed: &'a O,
}

/// A variant's spec and runs, for charts that compare variants.
pub struct VariantRuns<'a, P: Judge> {
    pub id: &'a str,
    pub title: &'a Words,
    pub spec: &'a P,
    pub runs: Vec<RunView<'a, P::Observed>>,
}

/// One item of a run's final state.
#[derive(Clone, Debug, PartialEq)]
pub struct FinalItem {
    /// The order it is about, if any (drawing a few orders out of many keeps these).
    pub order: Option<i64>,
    /// What it is (`#42`, `outbox rows`).
    pub subject: String,
    /// What the run left (`created`, `0`).
    pub value: String,
    /// What it should have been, when the run left something else.
    pub should_be: Option<String>,
}

impl FinalItem {
    pub fn is_wrong(&self) -> bool {
        self.should_be.is_some()
    }
}

/// One measured figure of a run as a report prints it (`name=value`): made from a kind's
/// [`Facts`] for printing, never read back.
#[derive(Clone, Debug, PartialEq)]
pub struct FactRow {
    pub name: &'static str,
    pub value: i64,
    /// The same in every run of the variant (a snapshot keeps it); otherwise redacted.
    pub stable: bool,
}

impl FactRow {
    pub fn stable(name: &'static str, value: i64) -> FactRow {
        FactRow { name, value, stable: true }
    }
    pub fn measured(name: &'static str, value: i64) -> FactRow {
        FactRow { name, value, stable: false }
    }
    /// Stable or measured as `stable` says.
    pub fn new(name: &'static str, value: i64, stable: bool) -> FactRow {
        FactRow { name, value, stable }
    }
}

/// Lines around a run's timeline.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunNotes {
    /// After `run N — `: what the log held (`stream: …`).
    pub heading: Option<Line>,
    /// After the timeline lines.
    pub after: Vec<Line>,
}

/// Report text a lab writes, with the values that vary from run to run marked as such, so a
/// report can redact them (a snapshot shows `[id]`, `[ms]`, `[n]`) and print the rest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Line(pub Vec<Piece>);

impl Line {
    /// `client library, as it named itself at the wire: C1 redis-py 8.1.0 (RESP3)`, for a run of
    /// workers from a command line; None when no process named its library.
    pub fn client_libraries(events: &[crate::timeline::Event], lang: crate::lang::Lang) -> Option<Line> {
        let libs = crate::interposer::client_libraries(events);
        if libs.is_empty() {
            return None;
        }
        let label = crate::lang::pick(
            lang,
            "client library, as it named itself at the wire",
            "thư viện client, như nó tự khai ở tầng giao thức",
        );
        Some(Line::text(format!("{label}: {}", libs.join(", "))))
    }
}

/// One piece of a [`Line`].
#[derive(Clone, Debug, PartialEq)]
pub enum Piece {
    /// Words and anything the same in every run.
    Text(String),
    /// A stream entry ID.
    EntryId(String),
    /// Milliseconds on the run's clock.
    Ms(i64),
    /// Microseconds, shown as milliseconds with one decimal.
    MsFromUs(i64),
    /// A measured count that differs between runs.
    Count(i64),
    /// Words a measurement chooses (a classification such as "limit: handlers"), which can
    /// differ between runs; a snapshot shows `[measured]`.
    Measured(String),
    /// Words drawn from the seed (who waited first, so who received what): the same in every
    /// run of the variant with the same `--seed`, even where the scheduler decides the
    /// interleaving, so a snapshot keeps them.
    Seeded(String),
    /// Words the scheduler decides (who won a race): `[x]` in a snapshot.
    Raced(String),
}

impl Line {
    pub fn text(s: impl Into<String>) -> Line {
        Line(vec![Piece::Text(s.into())])
    }

    /// Append a piece (builder style).
    pub fn and(mut self, piece: Piece) -> Line {
        self.0.push(piece);
        self
    }

    /// Append words.
    pub fn and_text(self, s: impl Into<String>) -> Line {
        self.and(Piece::Text(s.into()))
    }

    /// Append another line's pieces.
    pub fn and_line(mut self, other: Line) -> Line {
        self.0.extend(other.0);
        self
    }

    /// The same line with every number in its text marked as varying (a snapshot then shows
    /// `[n]`): for per-run details where the scheduler decides the interleaving.
    pub fn redacting_numbers(self) -> Line {
        let mut out = Vec::new();
        for piece in self.0 {
            let Piece::Text(text) = piece else {
                out.push(piece);
                continue;
            };
            let mut rest = text.as_str();
            while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
                let end = rest[start..].find(|c: char| !c.is_ascii_digit()).map_or(rest.len(), |e| start + e);
                out.push(Piece::Text(rest[..start].to_string()));
                out.push(Piece::Count(rest[start..end].parse().unwrap_or(0)));
                rest = &rest[end..];
            }
            out.push(Piece::Text(rest.to_string()));
        }
        Line(out)
    }

    /// Join lines with `sep` between them.
    pub fn join(lines: Vec<Line>, sep: &str) -> Line {
        let mut out = Line::default();
        for (i, l) in lines.into_iter().enumerate() {
            if i > 0 {
                out.0.push(Piece::Text(sep.to_string()));
            }
            out.0.extend(l.0);
        }
        out
    }
}
