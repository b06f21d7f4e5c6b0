//! The seed's claims about a sorted-set queue, each next to what the runs measured: one
//! `seed says …; measured …` line per claim a variant settles (ties, a crash after the pop,
//! polling against a blocking pop, aging).

use crate::labs::priority::seed_claims::{says, spread};
use crate::labs::priority::zset::{Experiment, ZsetSpec};
use crate::labs::priority::zset_checker::ZsetMeasures;
use crate::labs::priority::zset_worker::PopSpec;
use crate::labs::{Line, Piece};
use crate::lang::{pick, Lang};

/// Lost jobs: the same in every run unless something is broken; `a–b` when runs differ.
fn decided(xs: &[f64]) -> String {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min) as i64;
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max) as i64;
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}–{hi}")
    }
}

/// The claims a variant's experiment settles, over all its runs.
pub fn lines(spec: &ZsetSpec, all: &[ZsetMeasures], lang: Lang) -> Vec<Line> {
    let runs = all.len();
    let of = |f: fn(&ZsetMeasures) -> Option<f64>| -> Vec<f64> { all.iter().filter_map(f).collect() };
    match (&spec.experiment, &spec.pop) {
        (Experiment::Ties { .. }, _) => {
            let reverse = all.iter().filter(|m| m.ties.as_ref().is_some_and(|t| t.is_reverse_bytes())).count();
            let fifo = all.iter().filter(|m| m.ties.as_ref().is_some_and(|t| t.is_fifo())).count();
            let claim = pick(
                lang,
                "equal scores come out 'at random' (its quiz: 'usually lexicographic')",
                "các member cùng score được lấy 'ngẫu nhiên' (phần quiz: 'thường là lexicographic')",
            );
            let what = crate::tr!(
                lang,
                "reverse byte order of the member (ZPOPMAX) in {reverse}/{runs} runs, the order queued in {fifo}/{runs}",
                "thứ tự byte ngược của member (ZPOPMAX) ở {reverse}/{runs} lần, thứ tự xếp hàng ở {fifo}/{runs}"
            );
            vec![says(lang, claim).and_text(what)]
        }
        (Experiment::Crash { .. }, pop) => vec![crash_line(pop, &of(|m| Some(m.lost as f64)), lang)],
        (Experiment::Arrivals { .. }, pop) => {
            let p50 = of(|m| m.arrivals.as_ref().map(|w| w.p50_ms));
            let max = of(|m| m.arrivals.as_ref().map(|w| w.max_ms));
            let idle = of(|m| m.idle.as_ref().map(|i| i.per_s()));
            let claim = pick(
                lang,
                "no blocking pop: poll with a sleep loop, which costs CPU and latency",
                "không có blocking pop: phải poll bằng sleep loop, tốn CPU và tăng latency",
            );
            let head = match pop {
                PopSpec::Bzpopmax => {
                    pick(lang, "BZPOPMAX (Redis ≥ 5.0) exists: ", "BZPOPMAX (Redis ≥ 5.0) có tồn tại: ")
                }
                PopSpec::PollSleep { sleep_ms } | PopSpec::Reliable { sleep_ms, .. } => &crate::tr!(
                    lang,
                    "ZPOPMAX, sleep {sleep_ms} ms when empty: ",
                    "ZPOPMAX, rỗng thì sleep {sleep_ms} ms: "
                ),
            };
            let line = says(lang, claim)
                .and_text(format!("{head}{}", pick(lang, "a job waited p50 ", "job chờ p50 ")))
                .and_line(spread(&p50, Piece::Ms))
                .and_text(", max ")
                .and_line(spread(&max, Piece::Ms))
                .and_text(pick(lang, "; the idle worker sent ", "; worker rảnh gửi "))
                .and_line(spread(&idle, Piece::Count))
                .and_text(pick(lang, " commands/s", " lệnh/giây"));
            vec![line]
        }
        (Experiment::Flood { tau_ms, ms, .. }, _) => {
            let low = of(|m| m.flood_low.as_ref().map(|w| w.max_ms));
            let claim = pick(
                lang,
                "aging (a waiting job's score rises) prevents starvation",
                "aging (job chờ lâu tự tăng score) tránh starvation",
            );
            let how = match tau_ms {
                Some(tau) => crate::tr!(
                    lang,
                    "with aging (τ = {tau} ms) low waited up to ",
                    "có aging (τ = {tau} ms) low chờ tới "
                ),
                None => crate::tr!(
                    lang,
                    "without aging, under a {ms} ms critical flood low waited up to ",
                    "không aging, trong {ms} ms critical dồn dập low chờ tới "
                ),
            };
            vec![says(lang, claim).and_text(how).and_line(spread(&low, Piece::Ms))]
        }
    }
}

/// The crash experiment's claim and the jobs lost after the SIGKILL.
fn crash_line(pop: &PopSpec, lost: &[f64], lang: Lang) -> Line {
    let (claim, how) = match pop {
        PopSpec::Reliable { .. } => (
            pick(
                lang,
                "reliable delivery must be built outside the sorted set",
                "phải tự xây lớp reliable delivery bên ngoài sorted set",
            ),
            pick(
                lang,
                "with a leased pop into a processing set, jobs lost after the SIGKILL: ",
                "với pop có lease vào tập processing, job mất sau SIGKILL: ",
            ),
        ),
        PopSpec::PollSleep { .. } | PopSpec::Bzpopmax => (
            pick(
                lang,
                "a worker that crashes after the pop loses the message for good",
                "worker crash sau khi pop thì message mất vĩnh viễn",
            ),
            pick(lang, "jobs lost after the SIGKILL right after ZPOPMAX: ", "job mất sau SIGKILL ngay sau ZPOPMAX: "),
        ),
    };
    says(lang, claim).and_text(how).and_text(decided(lost))
}
