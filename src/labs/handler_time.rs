//! What a worker from a command line spent on each job, measured from its events (its take and
//! its end, read at the wire), not what it was told: a header's "handler 100 ms" is a fact only
//! for ordlab's own worker, which sleeps exactly that; anyone's program does what its code does
//! (the seed's Node worker sleeps 500 ms whatever it is told). Pure: events in, a line out.

use crate::labs::{Line, Piece};
use crate::lang::Lang;
use crate::timeline::{Actor, Event};
use std::collections::BTreeMap;

/// Per process, the time from each job's start to its end (ms), in the order they ended: a
/// start and an end are matched by the job they name, within one process.
pub fn spent_ms(
    events: &[Event],
    start: impl Fn(&Event) -> Option<String>,
    end: impl Fn(&Event) -> Option<String>,
) -> BTreeMap<Actor, Vec<f64>> {
    let mut open: BTreeMap<(Actor, String), i64> = BTreeMap::new();
    let mut out: BTreeMap<Actor, Vec<f64>> = BTreeMap::new();
    for e in events {
        if let Some(job) = start(e) {
            open.insert((e.actor, job), e.t_us);
        } else if let Some(job) = end(e) {
            if let Some(t0) = open.remove(&(e.actor, job)) {
                out.entry(e.actor).or_default().push((e.t_us - t0) as f64 / 1000.0);
            }
        }
    }
    out
}

/// `W1 spent 104 ms–111 ms per job (median 105 ms) from its take to its end; it was told 100 ms`.
pub fn lines(spent: &BTreeMap<Actor, Vec<f64>>, between: &str, told: &str, lang: Lang) -> Vec<Line> {
    let ms = |x: f64| Piece::Ms(x.round() as i64);
    spent
        .iter()
        .filter(|(_, xs)| !xs.is_empty())
        .map(|(actor, xs)| {
            let mut sorted = xs.clone();
            sorted.sort_by(f64::total_cmp);
            let (lo, hi, mid) = (sorted[0], sorted[sorted.len() - 1], sorted[sorted.len() / 2]);
            Line::text(crate::tr!(lang, "{actor} spent ", "{actor} mất "))
                .and(ms(lo))
                .and_text("–")
                .and(ms(hi))
                .and_text(crate::tr!(lang, " per job (median ", " mỗi job (trung vị "))
                .and(ms(mid))
                .and_text(crate::tr!(
                    lang,
                    ") {between}, measured; it was told {told}",
                    ") {between}, đo được; nó được báo {told}"
                ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::EventKind;

    fn ev(t_ms: i64, actor: Actor, detail: &str) -> Event {
        Event { t_us: t_ms * 1000, actor, kind: EventKind::crashed(true, detail) }
    }

    #[test]
    fn each_job_from_its_start_to_its_end_per_process() {
        let w1 = Actor::Worker(1);
        let events = vec![
            ev(0, w1, "take j1"),
            ev(505, w1, "done j1"),
            ev(506, w1, "take j2"),
            ev(1010, w1, "done j2"),
            ev(1011, Actor::Worker(2), "done j3"),
        ];
        let detail = |e: &Event, word: &str| match &e.kind {
            EventKind::Crashed { detail, .. } => detail.strip_prefix(word).map(str::to_string),
            _ => None,
        };
        let spent = spent_ms(&events, |e| detail(e, "take "), |e| detail(e, "done "));
        assert_eq!(spent[&w1], [505.0, 504.0]);
        assert!(!spent.contains_key(&Actor::Worker(2)), "an end with no start is no job");
        let line = crate::timeline::vocabulary::Redactor::NONE
            .line(&lines(&spent, "from its take to its LREM", "100 ms (ORDLAB_COST_MS)", Lang::En)[0]);
        assert_eq!(
            line,
            "W1 spent 504 ms–505 ms per job (median 505 ms) from its take to its LREM, measured; it was told 100 ms (ORDLAB_COST_MS)"
        );
    }
}
