//! The seed's claims about its stream loops, each next to what the runs measured: one
//! `seed says …; measured …` line per claim a variant settles. Figures that vary from run to
//! run are measured pieces (a snapshot shows `[ms]`, `[n]`); counts the loop decides by
//! construction are words.

use crate::labs::priority::priority::{ratio_text, PrioritySpec};
use crate::labs::priority::seed_claims::{ms, says, spread};
use crate::labs::priority::served::{self as priority, PriorityMeasures};
use crate::labs::priority::unserved::{NeverServed, Unserved, Wait};
use crate::labs::{Line, Piece};
use crate::lang::{pick, Lang};
use crate::roles::priority_loop::LoopSpec;

/// A count the loop decides (the same in every run unless something is broken): the value,
/// or `a–b` when runs differ, as words.
fn decided(xs: &[f64]) -> Line {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if ms(lo) == ms(hi) {
        Line::text(ms(lo).to_string())
    } else {
        Line::text(format!("{}–{}", ms(lo), ms(hi)))
    }
}

/// The claims a variant's loop settles, over all its runs.
pub fn lines(spec: &PrioritySpec, all: &[PriorityMeasures], lang: Lang) -> Vec<Line> {
    let seeds = matches!(spec.worker_loop, LoopSpec::SeedStrict { .. } | LoopSpec::SeedWeighted { .. });
    let of = |f: fn(&PriorityMeasures) -> Option<f64>| -> Vec<f64> { all.iter().filter_map(f).collect() };
    let mut out = Vec::new();
    if spec.claims.strict {
        let lower = of(|m| m.backlog.as_ref().map(|b| b.lower_before_critical_drained as f64));
        if !lower.is_empty() {
            let claim = pick(
                lang,
                "the worker never reads low while critical has messages",
                "worker không đọc low khi critical còn message",
            );
            let n = decided(&lower);
            let tail = pick(
                lang,
                " normal/low jobs served before the critical backlog was drained",
                " job normal/low được xử lý trước khi hết tồn đọng critical",
            );
            out.push(says(lang, claim).and_line(n).and_text(tail));
        }
    }
    let probes: Vec<&Wait> = all.iter().filter_map(|m| m.aligned_probe.as_ref()).collect();
    if !probes.is_empty() && seeds {
        let served: Vec<f64> = probes.iter().filter_map(|w| w.served_ms()).collect();
        let never: Vec<&NeverServed> = probes.iter().filter_map(|w| w.never()).collect();
        let claim = pick(
            lang,
            "critical blocks only briefly 'so as not to delay new messages'",
            "critical chỉ block ngắn 'để không trì hoãn khi có message mới'",
        );
        let tail = pick(
            lang,
            " for a critical job queued while the worker sat in its longest read on another stream",
            " cho một job critical vào hàng đợi lúc worker đang nằm trong lần đọc dài nhất trên stream khác",
        );
        let mut line = says(lang, claim);
        if !served.is_empty() {
            line = line.and(Piece::Text(pick(lang, "waited ", "chờ ").into())).and_line(spread(&served, Piece::Ms));
            if !never.is_empty() {
                let n = served.len();
                line = line.and_text(crate::tr!(lang, " in {n} run(s)", " trong {n} lần"));
            }
            line = line.and_text(tail);
        }
        if let Some(first) = never.first() {
            let (k, n) = (never.len(), probes.len());
            let sep = if served.is_empty() { "" } else { "; " };
            line = match first.why {
                Unserved::Patience { .. } => line.and_text(sep).and_line(first.why_words(lang)).and_text(crate::tr!(
                    lang,
                    " in {k} of {n} runs",
                    " trong {k}/{n} lần"
                )),
                _ => line
                    .and_text(crate::tr!(
                        lang,
                        "{sep}never served in {k} of {n} runs (",
                        "{sep}không bao giờ được xử lý trong {k}/{n} lần ("
                    ))
                    .and_line(first.why_words(lang))
                    .and_text(")"),
            };
            if served.is_empty() {
                line = line.and_text(tail);
            }
        }
        out.push(line);
    }
    if let (Some(t), true) = (&spec.trickle, spec.claims.strict && seeds) {
        let low = of(|m| m.trickle_lower.as_ref().map(|w| w.max_ms));
        if !low.is_empty() {
            let claim = pick(
                lang,
                "low starves only if critical traffic never stops",
                "low chỉ bị bỏ đói nếu luồng critical liên tục không dừng",
            );
            let every = t.every_ms;
            let head = crate::tr!(
                lang,
                "with one critical job every {every} ms (the worker mostly idle) low waited ",
                "với một job critical mỗi {every} ms (worker gần như rảnh) low chờ "
            );
            out.push(says(lang, claim).and_text(head).and_line(spread(&low, Piece::Ms)));
        }
    }
    if let Some(r) = spec.claims.ratio {
        out.extend(ratio_lines(spec, all, r, lang));
    }
    let per_s = of(|m| m.burst_jobs_per_s);
    let p90 = of(|m| m.trickle_critical.as_ref().map(|w| w.p90_ms));
    if spec.claims.ratio.is_some() && !per_s.is_empty() && !p90.is_empty() {
        let claim = pick(
            lang,
            "nothing about the BLOCK 100 on each empty stream",
            "không nói gì về BLOCK 100 trên mỗi stream rỗng",
        );
        let alone = pick(lang, "critical alone ", "chỉ có critical ");
        let every = spec.trickle.as_ref().map_or(0.0, |t| t.every_ms);
        let trickle = crate::tr!(
            lang,
            " jobs/s; one critical job every {every} ms waited p90 ",
            " job/s; một job critical mỗi {every} ms chờ p90 "
        );
        out.push(
            says(lang, claim)
                .and_text(alone)
                .and_line(spread(&per_s, Piece::Count))
                .and_text(trickle)
                .and_line(spread(&p90, Piece::Ms)),
        );
    }
    out
}

/// The 10:5:1 claim and low never starving, for a weighted loop.
fn ratio_lines(spec: &PrioritySpec, all: &[PriorityMeasures], r: [f64; 3], lang: Lang) -> Vec<Line> {
    let mut out = Vec::new();
    let served: Vec<[u32; 3]> =
        all.iter().filter_map(|m| m.backlog.as_ref().and_then(|b| b.served_while_all_backlogged)).collect();
    if let Some(s) = served.first() {
        let claim = crate::tr!(
            lang,
            "with all three backlogged the throughput ratio is {}:{}:{}",
            "khi cả ba stream đều có message, tỷ lệ throughput là {}:{}:{}",
            r[0],
            r[1],
            r[2]
        );
        let same = served.iter().all(|x| x == s);
        let counts = format!("{}:{}:{} ({})", s[0], s[1], s[2], ratio_text(*s));
        let how = if same {
            pick(
                lang,
                " jobs in every run — by construction: one read per stream per round",
                " job trong mọi lần chạy — do cấu trúc: mỗi vòng đọc mỗi stream một lần",
            )
        } else {
            pick(lang, " jobs in run 1; other runs differ", " job ở lần 1; các lần khác khác nhau")
        };
        out.push(says(lang, &claim).and_text(counts).and_text(how));
        let work: Vec<[f64; 3]> =
            all.iter().filter_map(|m| m.backlog.as_ref().and_then(|b| b.work_ms_while_all_backlogged)).collect();
        let [c, n, l] = spec.cost_ms.array();
        if let (Some(w), true) = (work.first(), c != n || n != l) {
            let total: f64 = w.iter().sum::<f64>().max(1e-9);
            let pct = |x: f64| Piece::Count(ms(x * 100.0 / total));
            let head = pick(lang, "in worker time it is ", "theo thời gian worker là ");
            let tail = pick(lang, " % (run 1)", " % (lần 1)");
            let line = says(lang, &claim)
                .and_text(head)
                .and(pct(w[0]))
                .and_text(" : ")
                .and(pct(w[1]))
                .and_text(" : ")
                .and(pct(w[2]));
            out.push(line.and_text(tail));
        }
    }
    let gaps: Vec<f64> = all.iter().filter_map(|m| m.backlog.as_ref().and_then(|b| b.low_gap_ms)).collect();
    if !gaps.is_empty() {
        let claim =
            pick(lang, "low is served every round: no starvation", "low vẫn được xử lý mỗi vòng: không bị bỏ đói");
        let head = pick(
            lang,
            "the longest time low waited with none served: ",
            "thời gian dài nhất low chờ mà không job low nào được xử lý: ",
        );
        out.push(says(lang, claim).and_text(head).and_line(spread(&gaps, Piece::Ms)));
    }
    out
}

/// Every run's measures, for [`lines`].
pub fn measures_of<O>(runs: &[crate::labs::RunView<'_, O>]) -> Vec<PriorityMeasures> {
    runs.iter().map(|r| priority::measure(r.events)).collect()
}

#[cfg(test)]
mod tests {
    use crate::labs::priority::priority::seed_lines::*;

    #[test]
    fn a_spread_always_shows_both_ends_of_several_runs() {
        assert_eq!(spread(&[5003.2], Piece::Ms).0, [Piece::Ms(5003)]);
        // Two runs that round alike still print both ends: the snapshot's shape is fixed.
        assert_eq!(spread(&[5003.2, 5002.9], Piece::Ms).0, [Piece::Ms(5003), Piece::Text("–".into()), Piece::Ms(5003)]);
        assert_eq!(
            spread(&[7.0, 2.0, 4.0], Piece::Count).0,
            [Piece::Count(2), Piece::Text("–".into()), Piece::Count(7)]
        );
        assert_eq!(decided(&[0.0, 0.0]), Line::text("0"));
        assert_eq!(decided(&[0.0, 20.0]), Line::text("0–20"));
    }
}
