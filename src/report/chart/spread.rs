//! The charts of a whole lab: the ones its kind draws (per variant and across variants) and,
//! for a lab whose variants race, how often each went wrong over its runs with the 95 %
//! interval, beside the seed's published counts.

use crate::chart::{Axis, Chart, Scale, Series, Style};
use crate::checker::Expectation;
use crate::labs::{Procedure, VariantOf};
use crate::lang::Words;
use crate::report::{LabReport, VariantReport};
use crate::stats::wilson_95;
use crate::words;

/// Every chart of a lab: the comparison across variants first, then each variant's own (its
/// id prefixed with the variant's), then the spread of wrong runs where the lab has one. A
/// report read from a compact record has them from its full runs.
pub fn lab_charts(report: &LabReport) -> Vec<Chart> {
    if let Some(digest) = &report.from_all_runs {
        return digest.charts.clone();
    }
    let variants: Vec<VariantOf<'_>> = report
        .variants
        .iter()
        .map(|v| VariantOf { id: &v.id, title: &v.title, procedure: &v.procedure, records: &v.run_records })
        .collect();
    let mut charts = Procedure::compare_charts(&variants);
    for v in &report.variants {
        for mut c in v.procedure.charts(&v.run_records) {
            c.id = format!("{}-{}", v.id, c.id);
            charts.push(c);
        }
    }
    charts.extend(wrong_runs(report));
    charts
}

/// Runs judged wrong per variant (%), with Wilson 95 % whiskers, and the seed's counts as open
/// circles: drawn when at least two variants ran five times or more and one of them races
/// (its expectation is `some` or `any`).
pub fn wrong_runs(report: &LabReport) -> Option<Chart> {
    let many = |v: &&VariantReport| v.runs >= 5;
    let races = report.variants.iter().filter(many).any(|v| matches!(v.expected, Expectation::Some | Expectation::Any));
    if report.variants.iter().filter(many).count() < 2 || !races {
        return None;
    }
    let categories: Vec<Words> = report.variants.iter().map(|v| Words::same(&v.id)).collect();
    let judged = |v: &VariantReport| v.runs - v.unknown;
    let measured = Series {
        name: Words::new("measured", "đo được"),
        style: Style::Bars,
        points: report.variants.iter().enumerate().map(|(i, v)| (i as f64, percent(v.wrong, judged(v)))).collect(),
        err: Some(
            report
                .variants
                .iter()
                .map(|v| {
                    let (lo, hi) = wilson_95(v.wrong, judged(v));
                    (lo * 100.0, hi * 100.0)
                })
                .collect(),
        ),
        unmeasured: Vec::new(),
    };
    let seed_points: Vec<(f64, f64)> = report
        .variants
        .iter()
        .enumerate()
        .flat_map(|(i, v)| {
            v.seed.iter().flat_map(move |s| counts(&s.figure).into_iter().map(move |(k, n)| (i as f64, percent(k, n))))
        })
        .collect();
    let mut series = vec![measured];
    if !seed_points.is_empty() {
        series.push(Series {
            name: Words::new("seed's runs", "số liệu bài gốc"),
            style: Style::HollowPoints,
            points: seed_points,
            err: None,
            unmeasured: Vec::new(),
        });
    }
    let runs: Vec<String> = report.variants.iter().map(|v| format!("{} {}", v.id, v.runs)).collect();
    Some(Chart {
        id: "wrong-runs".into(),
        title: words!(
            "{}: runs that ended wrong, per variant",
            "{}: số lần chạy cho kết quả sai, theo biến thể",
            report.lab.id
        ),
        x: Axis {
            label: Words::new("variant", "biến thể"), unit: String::new(), scale: Scale::Categories(categories)
        },
        y: Axis { label: Words::new("runs wrong", "lần sai"), unit: "%".into(), scale: Scale::Linear },
        series,
        marks: Vec::new(),
        note: Some(words!(
            "whiskers: 95 % interval (Wilson) · runs: {} · time scale {}",
            "râu: khoảng tin cậy 95 % (Wilson) · số lần: {} · time scale {}",
            runs.join(", "),
            report.environment.time_scale
        )),
    })
}

fn percent(k: u32, n: u32) -> f64 {
    if n == 0 {
        0.0
    } else {
        k as f64 * 100.0 / n as f64
    }
}

/// Every `k/n` in a seed's figure: "3/20, 4/20, 8/20 (varies)" → [(3, 20), (4, 20), (8, 20)].
fn counts(figure: &str) -> Vec<(u32, u32)> {
    figure
        .split(|c: char| !(c.is_ascii_digit() || c == '/'))
        .filter_map(|t| t.split_once('/'))
        .filter_map(|(k, n)| Some((k.parse().ok()?, n.parse().ok()?)))
        .filter(|&(k, n)| n > 0 && k <= n)
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::checker::{Expectation, Verdict};
    use crate::report::fixture::lock_race;
    use crate::scenario::{SeedCheck, SeedFigure};

    /// The lock lab with s4a (measured only, 1 of 10 wrong, the seed's 3/20 4/20 8/20) and
    /// s4c (all 5 wrong).
    fn lab() -> crate::report::LabReport {
        let mut r = lock_race(Verdict::Wrong);
        let template = r.variants[0].clone();
        let runs = |n: u32, wrong: u32| {
            (1..=n)
                .map(|i| {
                    let mut rec = template.run_records[0].clone();
                    rec.run = i;
                    rec.verdict.verdict = if i <= wrong { Verdict::Wrong } else { Verdict::Right };
                    rec
                })
                .collect::<Vec<_>>()
        };
        let mut a = template.clone();
        a.id = "s4a".into();
        a.expected = Expectation::Any;
        a.run_records = runs(10, 1);
        a.seed = Some(SeedFigure { figure: "3/20, 4/20, 8/20 (varies)".into(), agrees: SeedCheck::SomeWrong });
        let mut c = template.clone();
        c.run_records = runs(5, 5);
        for v in [&mut a, &mut c] {
            v.recount();
        }
        r.variants = vec![a, c];
        r
    }

    #[test]
    fn racing_variants_get_a_wrong_runs_chart_with_intervals_and_seed_counts() {
        let chart = super::wrong_runs(&lab()).expect("two variants, one races");
        chart.validate().unwrap();
        assert_eq!(chart.series[0].points, vec![(0.0, 10.0), (1.0, 100.0)]);
        let (lo, hi) = chart.series[0].err.as_ref().unwrap()[0];
        assert!((lo - 1.8).abs() < 0.1 && (hi - 40.4).abs() < 0.1, "Wilson 1/10: {lo}–{hi}");
        assert_eq!(chart.series[1].points, vec![(0.0, 15.0), (0.0, 20.0), (0.0, 40.0)]);
        assert!(chart.note.as_ref().unwrap().en.contains("s4a 10, s4c 5"));
    }

    #[test]
    fn deterministic_or_single_variant_labs_get_none() {
        let mut r = lab();
        r.variants[0].expected = Expectation::All;
        assert!(super::wrong_runs(&r).is_none(), "no variant races");
        let mut r = lab();
        r.variants.truncate(1);
        assert!(super::wrong_runs(&r).is_none(), "one variant");
    }

    #[test]
    fn seed_counts_are_read_from_the_figure() {
        assert_eq!(super::counts("3/20, 4/20, 8/20 (varies)"), vec![(3, 20), (4, 20), (8, 20)]);
        assert_eq!(super::counts("wrong 10/10"), vec![(10, 10)]);
        assert_eq!(super::counts("paid/2 in all three cases"), vec![]);
    }
}
