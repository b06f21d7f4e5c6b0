//! Real job-queue libraries under test (`library-*` labs): the library's own client, worker
//! processes and state, a fault placed at a named command by the interposer, judged by the
//! job-queue checker against the guarantee the library documents.
//!
//! Each library is installed at its pinned version into ordlab's cache on first use (`just
//! setup` does it beforehand); one that cannot be installed here says NOT TESTED and why, and
//! CI, which installs every library, fails instead.

use super::support;
use ordlab::labs::library::job_queue::LibrarySpec;
use ordlab::labs::library::manifest::{LibraryRef, Manifest};
use ordlab::labs::{Observed, RunRecord};
use ordlab::timeline::{Actor, EventKind};

/// Why `name` at `versions` cannot be installed here, if so (installing it if it can).
async fn library_missing(name: &str, versions: &[&str]) -> Option<String> {
    for version in versions {
        let library = LibraryRef { name: name.into(), version: version.to_string(), adapter: None };
        let manifest = match Manifest::read(&library) {
            Ok(m) => m,
            Err(e) => return Some(e.to_string()),
        };
        if let Err(e) = ordlab::labs::library::install::ensure(&manifest, &library).await {
            return Some(e.to_string());
        }
    }
    None
}

/// Worker `n`'s commands as recorded at the wire, in order, up to its kill.
fn commands_of(r: &RunRecord, n: u32) -> Vec<String> {
    r.events
        .iter()
        .filter(|e| e.actor == Actor::Worker(n))
        .filter_map(|e| match &e.kind {
            EventKind::ServerCommand { args, .. } => args.first().cloned(),
            _ => None,
        })
        .collect()
}

fn killed(r: &RunRecord, n: u32) -> bool {
    r.events.iter().any(|e| e.actor == Actor::Worker(n) && matches!(e.kind, EventKind::Crashed { by_runner: true, .. }))
}

#[tokio::test]
async fn rq_loses_a_job_killed_after_blpop_on_two_queues_and_holds_it_on_one() {
    let missing = library_missing("rq", &["2.12.0", "3.0.0"]).await;
    if !support::has_runtime("rq 2.12.0 and 3.0.0 (just setup)", missing) {
        return;
    }
    let report = support::run_lab("library-rq", 1, 1.0, 7).await;
    for id in ["two-queues-2-12", "two-queues-3-0"] {
        let v = support::variant(&report, id);
        let r = &v.run_records[0];
        assert_eq!((v.wrong, v.unknown), (1, 0), "{id}: {:?}", r.verdict);
        let f = support::facts::<LibrarySpec>(v, r);
        assert_eq!((f.lost, f.once, f.promise_broken), (1, 1, 1), "{id}: {f:?}");
        // The pop reached the server, its reply never reached RQ: W1 died right there.
        let w1 = commands_of(r, 1);
        assert_eq!(w1.last().map(String::as_str), Some("BLPOP"), "{id}: W1 ended at {w1:?}");
        assert!(killed(r, 1), "{id}");
        let Observed::Library(o) = &r.observed else { panic!("{id}: a library run") };
        let job1 = &o.states["job-1"];
        assert_eq!((job1.status.as_str(), job1.places.as_deref()), ("queued", Some(&[][..])), "{id}");
        assert!(o.records.iter().all(|e| e.job != "job-1"), "{id}: job-1 never started");
    }
    let v = support::variant(&report, "one-queue-2-12");
    let r = &v.run_records[0];
    assert_eq!(v.unknown, 0, "{:?}", r.verdict);
    let f = support::facts::<LibrarySpec>(v, r);
    assert_eq!((f.stuck, f.lost, f.once, f.promise_broken), (1, 0, 1, 0), "{f:?}");
    assert_eq!(commands_of(r, 1).last().map(String::as_str), Some("BLMOVE"));
    let Observed::Library(o) = &r.observed else { panic!("a library run") };
    assert_eq!(o.states["job-1"].places.as_deref(), Some(&["intermediate:default".to_string()][..]));
}
