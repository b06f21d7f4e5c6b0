//! `results/SUMMARY.md`: one Markdown table over every lab and variant, with the measured
//! count of wrong runs next to what the seed published. The environment of the first report
//! heads it, and the header says so when the reports were not all produced in the same one.

use super::{Environment, LabReport, VariantReport};
use crate::checker::Outcome;
use crate::scenario::SeedCheck;
use crate::stats::wilson_95;
use std::fmt::Write;

/// The whole summary: environment header, then one table row per variant of every report.
pub fn render(reports: &[LabReport]) -> String {
    let mut out = String::from("# ordlab results\n\n");
    let Some(first) = reports.first() else {
        out.push_str("No lab reports.\n");
        return out;
    };
    environment(&mut out, reports, &first.environment);
    out.push_str(
        "\n| lab | variant | strategy | runs | wrong | dropped | expected | outcome | seed's figure | agrees | notes | environment |\n",
    );
    out.push_str("|---|---|---|---:|---|---|---|---|---|---|---|---|\n");
    for report in reports {
        for v in &report.variants {
            row(&mut out, report, v);
        }
    }
    out.push_str(
        "\n*wrong*: runs that ended in a wrong final state, out of all runs; for a measured or \
         at-least-one expectation also the 95 % Wilson interval over the judged runs. \
         *dropped*: runs in which some event never took effect (skipped as stale, refused, never \
         delivered), which the expectation must declare; — where the lab delivers nothing \
         through a queue. *agrees*: the measured count against the seed's figure; \"see report\" \
         where the figure is not a count of wrong runs. *notes*: who received the first event \
         (the order consumers wait in is drawn per run) and, for locks, whose holder locked first. \
         *environment*: the ordlab version, backend, server versions and time scale the row's lab \
         ran with (the header names the rows that differ from the first).\n",
    );
    out
}

fn environment(out: &mut String, reports: &[LabReport], env: &Environment) {
    let _ = writeln!(out, "- ordlab {} (commit {})", env.ordlab_version, env.git_commit);
    let _ =
        writeln!(out, "- backend {} · Redis {} · PostgreSQL {}", env.backend, env.redis_version, env.postgres_version);
    let dates: Vec<&str> = reports.iter().map(|r| r.environment.date.as_str()).collect();
    let (lo, hi) = (dates.iter().min().unwrap_or(&""), dates.iter().max().unwrap_or(&""));
    if lo == hi {
        let _ = writeln!(out, "- date {}", env.date);
    } else {
        let _ = writeln!(out, "- date {} (the {} reports span {lo} to {hi})", env.date, reports.len());
    }
    let _ = writeln!(out, "- time scale {} · seed {}", env.time_scale, env.seed);

    // Every field but the date, which differs between labs of one invocation anyway.
    type Field = (&'static str, fn(&Environment) -> String);
    let fields: [Field; 7] = [
        ("ordlab version", |e| e.ordlab_version.clone()),
        ("commit", |e| e.git_commit.clone()),
        ("backend", |e| e.backend.clone()),
        ("Redis", |e| e.redis_version.clone()),
        ("PostgreSQL", |e| e.postgres_version.clone()),
        ("time scale", |e| e.time_scale.to_string()),
        ("seed", |e| e.seed.to_string()),
    ];
    let mut differences = Vec::new();
    for (name, get) in fields {
        let base = get(env);
        let others: Vec<String> = reports
            .iter()
            .filter(|r| get(&r.environment) != base)
            .map(|r| format!("{} {}", r.lab.id, get(&r.environment)))
            .collect();
        if !others.is_empty() {
            differences.push(format!("{name} ({})", others.join(", ")));
        }
    }
    if reports.len() == 1 {
        let _ = writeln!(out, "- one report: {}", reports[0].lab.id);
    } else if differences.is_empty() {
        let _ = writeln!(out, "- all {} reports share this environment", reports.len());
    } else {
        let _ = writeln!(
            out,
            "- **the reports differ in environment** from the first ({}): {}",
            reports[0].lab.id,
            differences.join("; ")
        );
    }
}

pub(crate) fn wrong_cell(v: &VariantReport) -> String {
    let mut s = format!("{}/{}", v.wrong, v.runs);
    if v.expected.is_probabilistic() {
        let (lo, hi) = wilson_95(v.wrong, v.runs - v.unknown);
        let _ = write!(s, " (95 % CI {:.0}–{:.0} %)", lo * 100.0, hi * 100.0);
    }
    if v.unknown > 0 {
        let _ = write!(s, ", {} unknown", v.unknown);
    }
    s
}

fn outcome(o: Outcome) -> &'static str {
    match o {
        Outcome::Matched => "matches",
        Outcome::Mismatched => "DOES NOT MATCH",
        Outcome::Inconclusive => "inconclusive",
        Outcome::Skipped => "skipped (server too old)",
        Outcome::TooFewRuns => "too few runs to show",
    }
}

/// Does the measured count agree with the seed's figure?
pub(crate) fn agreement(check: SeedCheck, v: &VariantReport) -> &'static str {
    let judged = v.runs.saturating_sub(v.unknown);
    if judged == 0 && check != SeedCheck::SeeReport {
        return "see report";
    }
    let agrees = match check {
        SeedCheck::AllWrong => v.wrong == judged,
        SeedCheck::NoneWrong => v.wrong == 0,
        SeedCheck::SomeWrong => v.wrong > 0,
        SeedCheck::AboutHalf => {
            let (lo, hi) = wilson_95(v.wrong, judged);
            lo <= 0.5 && 0.5 <= hi
        }
        SeedCheck::SeeReport => return "see report",
    };
    if agrees {
        "agrees"
    } else {
        "differs"
    }
}

/// Where a row ran: `ordlab 0.1.0 · local · Redis 7.0.15 · PostgreSQL 15.18 · time scale 1`.
pub(crate) fn environment_cell(e: &Environment) -> String {
    format!(
        "ordlab {} · {} · Redis {} · PostgreSQL {} · time scale {}",
        e.ordlab_version, e.backend, e.redis_version, e.postgres_version, e.time_scale
    )
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn row(out: &mut String, report: &LabReport, v: &VariantReport) {
    let (figure, agrees) = match &v.seed {
        Some(seed) => (seed.figure.as_str(), agreement(seed.agrees, v)),
        None => ("—", "—"),
    };
    let dropped = match v.procedure.intended() {
        Some(_) => format!("{}/{}", v.dropped, v.runs),
        None => "—".to_string(),
    };
    let mut expected = v.expected.to_string();
    if v.expected_dropped != crate::checker::Expectation::None {
        expected.push_str(&format!("; dropped {}", v.expected_dropped));
    }
    let notes = report.summary_note(v).unwrap_or_else(|| "—".into());
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        cell(&report.lab.id),
        cell(&v.id),
        cell(&v.procedure.approach()),
        v.runs,
        wrong_cell(v),
        dropped,
        cell(&expected),
        outcome(v.outcome),
        cell(figure),
        agrees,
        cell(&notes),
        cell(&environment_cell(&report.environment))
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::{Expectation, RunVerdict, Verdict};
    use crate::labs::order_stream::StreamObserved;
    use crate::labs::{Observed, RunRecord};
    use crate::report::LabInfo;
    use crate::scenario::SeedFigure;

    fn env() -> Environment {
        Environment {
            ordlab_version: "0.1.0".into(),
            git_commit: "c89f085".into(),
            backend: "local".into(),
            redis_version: "7.0.15".into(),
            redis_server: String::new(),
            postgres_version: "15.18".into(),
            lock_release: "Lua".into(),
            command_line: String::new(),
            date: "2026-11-29T20:07:02Z".into(),
            seed: 7,
            time_scale: 1.0,
        }
    }

    fn seed(figure: &str, agrees: SeedCheck) -> Option<SeedFigure> {
        Some(SeedFigure { figure: figure.into(), agrees })
    }

    /// A variant with `wrong` wrong runs and `unknown` undecided ones out of `runs`.
    fn variant(id: &str, strategy: &str, expected: Expectation, runs: u32, wrong: u32, unknown: u32) -> VariantReport {
        let procedure = crate::scenario::setup_from_toml(&format!(
            "consumers = 2\nstrategy = {strategy}\ninitial = []\nevents = [{{ order = 42, type = \"paid\", version = 2 }}]"
        ))
        .unwrap();
        let records = (0..runs)
            .map(|i| {
                let verdict = if i < wrong {
                    Verdict::Wrong
                } else if i < wrong + unknown {
                    Verdict::Unknown
                } else {
                    Verdict::Right
                };
                let observed = Observed::Stream(StreamObserved {
                    stream: vec![],
                    final_rows: vec![],
                    entry_bytes: None,
                    pending_after_run: None,
                    documents: None,
                    waiting_order: vec![],
                });
                RunRecord {
                    run: i + 1,
                    events: vec![],
                    timed_out: false,
                    observed,
                    verdict: RunVerdict { verdict, reasons: vec![] },
                }
            })
            .collect();
        let v = crate::scenario::Variant {
            id: id.into(),
            title: id.into(),
            runs,
            procedure,
            expect: expected,
            expect_dropped: Expectation::Any,
            scheduler_race: false,
            timer_race: false,
            seed: None,
            explored: None,
            explore_setup: None,
        };
        VariantReport::tally(&v, records)
    }

    fn seeded(mut v: VariantReport, figure: &str, agrees: SeedCheck) -> VariantReport {
        v.seed = seed(figure, agrees);
        v
    }

    fn lab(id: &str, variants: Vec<VariantReport>) -> LabReport {
        LabReport {
            schema_version: crate::SCHEMA_VERSION,
            environment: env(),
            lab: LabInfo {
                id: id.into(),
                title: id.into(),
                source: "seed".into(),
                description: None,
                question: None,
                family: None,
            },
            variants,
            from_all_runs: None,
        }
    }

    fn line_of<'a>(md: &'a str, start: &str) -> &'a str {
        md.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("no row {start} in\n{md}"))
    }

    fn lock(ttl_ms: u64, prework_max_ms: u64) -> String {
        format!("{{ kind = \"lock\", ttl_ms = {ttl_ms}, prework_max_ms = {prework_max_ms} }}")
    }

    #[test]
    fn one_table_over_every_lab_and_variant() {
        let reports = vec![
            lab(
                "baseline",
                vec![seeded(
                    variant("baseline", "\"plain\"", Expectation::All, 10, 10, 0),
                    "wrong 10/10",
                    SeedCheck::AllWrong,
                )],
            ),
            lab(
                "lock",
                vec![
                    seeded(
                        variant("s4a", &lock(5000, 0), Expectation::Any, 20, 4, 0),
                        "3/20, 4/20, 8/20 (varies)",
                        SeedCheck::SomeWrong,
                    ),
                    seeded(
                        variant("s4b", &lock(5000, 30), Expectation::Some, 20, 2, 0),
                        "10/20, 11/20, 11/20",
                        SeedCheck::AboutHalf,
                    ),
                    seeded(variant("s4c", &lock(500, 0), Expectation::All, 10, 9, 0), "10/10", SeedCheck::AllWrong),
                ],
            ),
            lab(
                "p2",
                vec![seeded(
                    variant(
                        "business-version",
                        "{ kind = \"cas\", version = \"business\" }",
                        Expectation::None,
                        5,
                        0,
                        0,
                    ),
                    "0/5",
                    SeedCheck::NoneWrong,
                )],
            ),
            lab(
                "new",
                vec![variant("x", "{ kind = \"cas\", version = \"entry-id\" }", Expectation::Exactly(1), 3, 1, 0)],
            ),
        ];
        let md = render(&reports);
        assert!(md.starts_with("# ordlab results\n"));
        assert!(md.contains("- ordlab 0.1.0 (commit c89f085)"));
        assert!(md.contains("- backend local · Redis 7.0.15 · PostgreSQL 15.18"));
        assert!(md.contains("- all 4 reports share this environment"));
        assert_eq!(md.matches("| lab | variant |").count(), 1, "one table");
        assert_eq!(
            line_of(&md, "| baseline |"),
            "| baseline | baseline | plain UPDATE | 10 | 10/10 | 10/10 | all; dropped any (measured only) | matches \
             | wrong 10/10 | agrees | — | ordlab 0.1.0 · local · Redis 7.0.15 · PostgreSQL 15.18 · time scale 1 |"
        );
        assert_eq!(
            line_of(&md, "| lock | s4a |"),
            "| lock | s4a | lock TTL 5000 ms | 20 | 4/20 (95 % CI 8–42 %) | 20/20 | any (measured only); dropped any \
             (measured only) | matches | 3/20, 4/20, 8/20 (varies) | agrees | — | ordlab 0.1.0 · local · Redis 7.0.15 · PostgreSQL 15.18 · time scale 1 |"
        );
        // 2/20: the interval (3–30 %) leaves out the seed's ~50 %.
        assert!(line_of(&md, "| lock | s4b |").ends_with("| 10/20, 11/20, 11/20 | differs | — | ordlab 0.1.0 · local · Redis 7.0.15 · PostgreSQL 15.18 · time scale 1 |"));
        assert!(line_of(&md, "| lock | s4b |").contains("lock TTL 5000 ms, 0–30 ms pre-work"));
        assert_eq!(
            line_of(&md, "| lock | s4c |"),
            "| lock | s4c | lock TTL 500 ms | 10 | 9/10 | 10/10 | all; dropped any (measured only) | DOES NOT MATCH \
             | 10/10 | differs | — | ordlab 0.1.0 · local · Redis 7.0.15 · PostgreSQL 15.18 · time scale 1 |"
        );
        let p2 =
            "| CAS (business version) | 5 | 0/5 | 5/5 | none; dropped any (measured only) | matches | 0/5 | agrees |";
        assert!(line_of(&md, "| p2 |").contains(p2));
        let new = "| CAS (entry ID) | 3 | 1/3 | 3/3 | exactly 1; dropped any (measured only) | matches | — | — | — | ordlab 0.1.0 · local · Redis 7.0.15 · PostgreSQL 15.18 · time scale 1 |";
        assert!(line_of(&md, "| new |").ends_with(new));
    }

    #[test]
    fn about_half_agrees_when_the_interval_holds_it_and_counts_can_be_inconclusive() {
        let reports = vec![lab(
            "lock",
            vec![
                seeded(variant("s4b", &lock(5000, 30), Expectation::Some, 20, 11, 0), "10/20", SeedCheck::AboutHalf),
                seeded(variant("s4c", &lock(500, 0), Expectation::All, 10, 8, 2), "10/10", SeedCheck::AllWrong),
            ],
        )];
        let md = render(&reports);
        assert!(line_of(&md, "| lock | s4b |")
            .ends_with("| agrees | — | ordlab 0.1.0 · local · Redis 7.0.15 · PostgreSQL 15.18 · time scale 1 |"));
        let s4c = line_of(&md, "| lock | s4c |");
        assert!(s4c.contains("| 8/10, 2 unknown | 10/10 | all; dropped any (measured only) | inconclusive |"), "{s4c}");
        assert!(
            s4c.ends_with("| agrees | — | ordlab 0.1.0 · local · Redis 7.0.15 · PostgreSQL 15.18 · time scale 1 |"),
            "all judged runs wrong: {s4c}"
        );
        assert!(md.contains("- one report: lock"));
    }

    #[test]
    fn figures_that_are_not_counts_say_see_report() {
        let naive = variant("naive", "\"plain\"", Expectation::All, 1, 1, 0);
        let reports = vec![lab("outbox", vec![seeded(naive, "#42 created (wrong), #43 paid", SeedCheck::SeeReport)])];
        let md = render(&reports);
        assert!(line_of(&md, "| outbox |").ends_with("| #42 created (wrong), #43 paid | see report | — | ordlab 0.1.0 · local · Redis 7.0.15 · PostgreSQL 15.18 · time scale 1 |"));
    }

    #[test]
    fn differing_environments_are_named() {
        let mut other = lab("lock", vec![variant("s4c", &lock(500, 0), Expectation::All, 3, 3, 0)]);
        other.environment.time_scale = 0.25;
        other.environment.redis_version = "8.4.0".into();
        other.environment.date = "2026-11-29T21:00:00Z".into();
        let reports = vec![lab("baseline", vec![variant("baseline", "\"plain\"", Expectation::All, 3, 3, 0)]), other];
        let md = render(&reports);
        assert!(
            md.contains("- **the reports differ in environment** from the first (baseline): Redis (lock 8.4.0); time scale (lock 0.25)"),
            "{md}"
        );
        assert!(md.contains("(the 2 reports span 2026-11-29T20:07:02Z to 2026-11-29T21:00:00Z)"));
        // Each row names its own environment.
        assert!(line_of(&md, "| lock |")
            .ends_with("| ordlab 0.1.0 · local · Redis 8.4.0 · PostgreSQL 15.18 · time scale 0.25 |"));
        assert!(line_of(&md, "| baseline |").ends_with("· local · Redis 7.0.15 · PostgreSQL 15.18 · time scale 1 |"));
    }

    #[test]
    fn no_reports_is_said() {
        assert_eq!(render(&[]), "# ordlab results\n\nNo lab reports.\n");
    }

    #[test]
    fn pipes_in_cells_are_escaped() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }
}
