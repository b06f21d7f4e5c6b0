//! The library matrix: a row per library at its version, a column per fault, and in each cell
//! the variants that placed that fault on that library with the jobs they lost, ran more than
//! once and left stuck. It is read off the records only (each variant's workers say which
//! fault it placed, each run's facts what came of it), so it judges nothing itself.

use super::job_queue::{LibraryFacts, LibrarySpec};
use crate::fault::{Action, Moment, Trigger};
use crate::labs::cross_table::{CellEntry, CrossRow, CrossTable, VariantRef};
use crate::lang::Words;
use std::collections::BTreeMap;

/// The matrix's columns: the faults of issue 32's matrix, then the labs' other steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Column {
    KillAfterFetch,
    KillAtSend,
    StopMidHandler,
    Pause,
    Held,
    LostReply,
    Reset,
    Restart,
    NoFault,
}

impl Column {
    pub const ALL: [Column; 9] = [
        Column::KillAfterFetch,
        Column::KillAtSend,
        Column::StopMidHandler,
        Column::Pause,
        Column::Held,
        Column::LostReply,
        Column::Reset,
        Column::Restart,
        Column::NoFault,
    ];

    pub fn name(self) -> Words {
        match self {
            Column::KillAfterFetch => Words::new("SIGKILL at a command's reply (after fetch)", "SIGKILL lúc reply tới (sau khi lấy job)"),
            Column::KillAtSend => Words::new("SIGKILL as a command is sent", "SIGKILL lúc gửi lệnh"),
            Column::StopMidHandler => Words::new("SIGTERM / SIGKILL mid-handler", "SIGTERM / SIGKILL giữa handler"),
            Column::Pause => Words::new("pause (SIGSTOP) in the handler", "tạm dừng (SIGSTOP) trong handler"),
            Column::Held => Words::new("a command held, another process's step", "một lệnh bị giữ, bước của tiến trình khác"),
            Column::LostReply => Words::new("lost reply", "mất reply"),
            Column::Reset => Words::new("connection reset", "reset kết nối"),
            Column::Restart => Words::new("server restart", "khởi động lại server"),
            Column::NoFault => Words::new("no fault (configuration, timing)", "không lỗi (cấu hình, thời gian)"),
        }
    }
}

/// The column of a variant and what its fault hit (`BLPOP`, `6000 ms at start job-1`), from
/// what its workers were given: the first worker with a fault, a stop or a held command.
pub fn column_of(spec: &LibrarySpec) -> (Column, Words) {
    for w in &spec.workers {
        if let Some(f) = w.faults.first() {
            let hit = match &f.trigger {
                Trigger::Command { command, pattern, .. } => {
                    command.clone().or_else(|| pattern.clone()).unwrap_or_default()
                }
                Trigger::Event { event, job, .. } => {
                    format!("{event} {}", job.as_deref().unwrap_or_default()).trim_end().to_string()
                }
                _ => String::new(),
            };
            let at_send = matches!(&f.trigger, Trigger::Command { moment: Moment::Send, .. });
            let on_command = matches!(&f.trigger, Trigger::Command { .. });
            let column = match &f.action {
                Action::PauseMs(ms) => {
                    return (Column::Pause, Words::new(format!("{ms} ms at {hit}"), format!("{ms} ms lúc {hit}")))
                }
                Action::LoseReply => Column::LostReply,
                Action::Reset => Column::Reset,
                Action::Restart => Column::Restart,
                Action::Kill if on_command && at_send => Column::KillAtSend,
                Action::Kill if on_command => Column::KillAfterFetch,
                Action::Kill => {
                    return (
                        Column::StopMidHandler,
                        Words::new(format!("SIGKILL at {hit}"), format!("SIGKILL lúc {hit}")),
                    )
                }
                _ => continue,
            };
            return (column, Words::new(hit.clone(), hit));
        }
        if let Some(stop) = &w.on_start {
            let signal = format!("{:?}", stop.signal).to_uppercase();
            return (
                Column::StopMidHandler,
                Words::new(format!("SIG{signal} at {}'s start", stop.job), format!("SIG{signal} khi {} bắt đầu", stop.job)),
            );
        }
        if let Some(hold) = &w.hold {
            let after = hold.after.as_deref().map(|a| format!(" after {a}")).unwrap_or_default();
            let sau = hold.after.as_deref().map(|a| format!(" sau {a}")).unwrap_or_default();
            return (Column::Held, Words::new(format!("{}{after}", hold.command), format!("{}{sau}", hold.command)));
        }
    }
    (Column::NoFault, Words::new("", ""))
}

/// What a variant's runs measured, summed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Runs judged right or wrong: the ones whose facts are summed.
    pub runs: u32,
    /// Runs judged unknown: left out of the sums, and said.
    pub unknown: u32,
    pub lost: i64,
    pub duplicate: i64,
    pub stuck: i64,
    pub disagreement: i64,
    pub failed: i64,
    /// Why the first unknown run is unknown.
    pub why_unknown: Option<String>,
}

impl Counts {
    /// An unknown run: its facts are not summed as measured, its reason is kept.
    pub fn add_unknown(&mut self, reasons: &[String]) {
        self.unknown += 1;
        if self.why_unknown.is_none() {
            self.why_unknown = Some(reasons.join("; ")).filter(|r| !r.is_empty());
        }
    }

    pub fn add(&mut self, f: &LibraryFacts) {
        self.runs += 1;
        self.lost += f.lost;
        self.duplicate += f.duplicate_sequential + f.duplicate_overlapping;
        self.stuck += f.stuck;
        self.disagreement += f.disagreement;
        self.failed += f.failed;
    }

    /// `lost 1 · dup 0 · stuck 0 (1 run)`, after what the fault hit.
    pub fn words(&self, hit: &Words) -> Words {
        // The words of one language: lost, dup, stuck, disagreement, failed, run, runs,
        // unknown, first.
        let side = |hit: &str, [lost, dup, stuck, disagree, failed, run, runs, unknown, first]: [&str; 9]| {
            let mut parts = Vec::new();
            if self.runs > 0 {
                let mut w = format!("{lost} {} · {dup} {} · {stuck} {}", self.lost, self.duplicate, self.stuck);
                if self.disagreement > 0 {
                    w.push_str(&format!(" · {disagree} {}", self.disagreement));
                }
                if self.failed > 0 {
                    w.push_str(&format!(" · {failed} {}", self.failed));
                }
                parts.push(format!("{w} ({} {})", self.runs, if self.runs == 1 { run } else { runs }));
            }
            if self.unknown > 0 {
                let why = self.why_unknown.as_deref().map(|w| format!(" ({first}: {w})")).unwrap_or_default();
                parts.push(format!("{} {unknown}{why}", self.unknown));
            }
            let prefix = if hit.is_empty() { String::new() } else { format!("{hit}: ") };
            format!("{prefix}{}", parts.join(" · "))
        };
        Words::new(
            side(&hit.en, ["lost", "dup", "stuck", "disagreement", "failed", "run", "runs", "unknown", "first"]),
            side(&hit.vi, ["mất", "trùng", "kẹt", "lệch", "thất bại", "lần", "lần", "không rõ", "lần đầu"]),
        )
    }
}

/// The matrix over `variants`; None where none is a library lab's.
pub fn table(variants: &[VariantRef<'_>]) -> Option<CrossTable> {
    let mut rows: BTreeMap<String, BTreeMap<Column, Vec<CellEntry>>> = BTreeMap::new();
    let mut placed = Vec::new();
    for v in variants {
        let crate::labs::Procedure::Library(spec) = v.procedure else { continue };
        let (column, hit) = column_of(spec);
        let mut counts = Counts::default();
        for r in v.runs {
            if r.verdict.verdict == crate::checker::Verdict::Unknown {
                counts.add_unknown(&r.verdict.reasons);
            } else if let Some(f) = v.procedure.facts_of::<LibrarySpec>(r) {
                counts.add(&f);
            }
        }
        let text = if counts.runs + counts.unknown == 0 {
            Words::new("no run measured", "không lần chạy nào đo được")
        } else {
            counts.words(&hit)
        };
        let entry = CellEntry { lab: v.lab.to_string(), variant: v.variant.to_string(), text };
        rows.entry(spec.library.shown()).or_default().entry(column).or_default().push(entry);
        placed.push(column);
    }
    if rows.is_empty() {
        return None;
    }
    let missing: Vec<Words> = Column::ALL.into_iter().filter(|c| !placed.contains(c)).map(Column::name).collect();
    let libraries = rows.keys().map(|l| l.split('@').next().unwrap_or(l).to_string()).collect::<std::collections::BTreeSet<_>>();
    let names = libraries.iter().cloned().collect::<Vec<_>>().join(", ");
    let footer = |libs: &str, variants: &str, none_yet: &str, lang: fn(&Words) -> &str| {
        let missing: Vec<&str> = missing.iter().map(lang).collect();
        let none = if missing.is_empty() { String::new() } else { format!(" {none_yet}: {}.", missing.join(", ")) };
        format!("{} {libs} ({names}), {} {variants}.{none}", libraries.len(), placed.len())
    };
    let footer_en = footer("libraries", "variants", "Faults no variant places yet", |w| w.en.as_str());
    let footer_vi = footer("thư viện", "biến thể", "Lỗi chưa biến thể nào đặt", |w| w.vi.as_str());
    Some(CrossTable {
        id: "matrix",
        title: Words::new("Job-queue libraries under faults", "Thư viện hàng đợi job khi có lỗi"),
        intro: Words::new(
            "Rows are the libraries at their versions, columns the faults; each cell names the variants that placed that fault on that library (the configuration is in the variant's title) and the jobs lost, run more than once (dup: sequential + overlapping) and stuck, summed over its runs, as ordlab's job-queue checker judged them (a run judged unknown is not summed: it is counted apart, with why). \"not run\": no variant places that fault on that library yet.",
            "Mỗi hàng là một thư viện ở một phiên bản, mỗi cột một loại lỗi; mỗi ô nêu các biến thể đã đặt lỗi đó lên thư viện đó (cấu hình nằm trong tiêu đề biến thể) và số job bị mất, chạy hơn một lần (trùng: nối tiếp + chồng nhau) và bị kẹt, cộng qua các lần chạy, theo bộ kiểm tra hàng đợi job của ordlab (lần chạy không rõ kết quả không được cộng: được đếm riêng, kèm lý do). \"chưa chạy\": chưa biến thể nào đặt lỗi đó lên thư viện đó.",
        ),
        corner: Words::new("library", "thư viện"),
        columns: Column::ALL.into_iter().map(Column::name).collect(),
        rows: rows
            .into_iter()
            .map(|(head, mut cells)| CrossRow {
                head,
                cells: Column::ALL.into_iter().map(|c| cells.remove(&c).unwrap_or_default()).collect(),
            })
            .collect(),
        footer: Words::new(footer_en, footer_vi),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(workers: &str) -> LibrarySpec {
        let text = format!(
            "library = {{ name = \"rq\", version = \"2.12.0\" }}\njobs = [{{ key = \"job-1\" }}]\nworkers = {workers}\n"
        );
        toml::from_str(&text).expect("a library spec")
    }

    #[test]
    fn each_fault_lands_in_its_column_with_what_it_hit() {
        let cases = [
            (r#"[{ queues = ["q"], faults = [{ command = "BLPOP", nth = 1, at = "reply" }] }]"#, Column::KillAfterFetch, "BLPOP"),
            (r#"[{ queues = ["q"], faults = [{ command = "with", pattern = "skip", at = "send" }] }]"#, Column::KillAtSend, "with"),
            (r#"[{ queues = ["q"], faults = [{ event = "start", job = "job-1", action = "kill" }] }]"#, Column::StopMidHandler, "SIGKILL at start job-1"),
            (r#"[{ queues = ["q"], on_start = { job = "job-1", signal = "term" } }]"#, Column::StopMidHandler, "SIGTERM at job-1's start"),
            (r#"[{ queues = ["q"], faults = [{ event = "start", job = "job-1", action = { pause_ms = 6000 } }] }, { queues = ["q"] }]"#, Column::Pause, "6000 ms at start job-1"),
            (r#"[{ queues = ["q"], hold = { command = "EXEC", after = "WATCH" } }]"#, Column::Held, "EXEC after WATCH"),
            (r#"[{ queues = ["q"], faults = [{ command = "BRPOP", at = "reply", action = "lose-reply" }] }]"#, Column::LostReply, "BRPOP"),
            (r#"[{ queues = ["q"], faults = [{ command = "BRPOP", at = "send", action = "reset" }] }]"#, Column::Reset, "BRPOP"),
            (r#"[{ queues = ["q"] }]"#, Column::NoFault, ""),
        ];
        for (workers, column, hit) in cases {
            let (c, h) = column_of(&spec(workers));
            assert_eq!((c, h.en.as_str()), (column, hit), "{workers}");
        }
    }

    #[test]
    fn counts_sum_the_runs_and_name_what_is_not_zero_only_when_it_is_there() {
        let mut c = Counts::default();
        let run = |lost, seq, over, disagreement| LibraryFacts {
            once: 0,
            lost,
            stuck: 0,
            failed: 0,
            duplicate_sequential: seq,
            duplicate_overlapping: over,
            disagreement,
            promise_broken: 0,
        };
        c.add(&run(1, 0, 0, 0));
        c.add(&run(0, 1, 1, 0));
        assert_eq!(c.words(&Words::new("BLPOP", "BLPOP")).en, "BLPOP: lost 1 · dup 2 · stuck 0 (2 runs)");
        c.add(&run(0, 0, 0, 1));
        assert_eq!(c.words(&Words::new("", "")).en, "lost 1 · dup 2 · stuck 0 · disagreement 1 (3 runs)");
        c.add_unknown(&["job-1: predicted lost, measured once".into()]);
        assert_eq!(
            c.words(&Words::new("", "")).en,
            "lost 1 · dup 2 · stuck 0 · disagreement 1 (3 runs) · 1 unknown (first: job-1: predicted lost, measured once)"
        );
    }

    #[test]
    fn a_variant_whose_runs_are_all_unknown_gives_no_count_only_why() {
        let mut c = Counts::default();
        c.add_unknown(&["the run hit its deadline".into()]);
        assert_eq!(c.words(&Words::new("BLPOP", "BLPOP")).en, "BLPOP: 1 unknown (first: the run hit its deadline)");
    }
}
