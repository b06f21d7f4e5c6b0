//! How an event is worded, drawn and ordered, asked of the event itself. The core events of
//! [`EventKind`](super::EventKind) answer here; every other event belongs to a vocabulary (a
//! lab family's, or a shared module's) that implements [`Vocabulary`] beside its enum and is
//! listed once in a [`Registry`], so adding an event touches no central match.
//!
//! A vocabulary's events travel as a [`FamilyEvent`](super::FamilyEvent) (their `kind` and
//! fields, the same JSON as ever) and are decoded back into their typed enum where they are
//! worded, drawn or judged.

use super::{Actor, FamilyEvent, Job};
use crate::lang::Lang;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// How to word a run's events.
#[derive(Clone, Copy, Debug)]
pub struct Wording {
    pub lang: Lang,
    /// The lab has several orders: name the order in every line.
    pub many_orders: bool,
    pub redact: Redactor,
}

/// The snapshot redactor: asked how to print each value that may vary between runs. Off, it
/// prints everything; on (snapshots and `ordlab diff`), it replaces what truly varies, visibly,
/// by `[id]`, `[ms]`, `[n]`, and keeps everything else. The ordering of a snapshot's events is
/// `report::redact`'s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Redactor {
    active: bool,
}

impl Redactor {
    /// Print every value as it is.
    pub const NONE: Redactor = Redactor { active: false };
    /// Replace what varies between runs.
    pub const SNAPSHOT: Redactor = Redactor { active: true };

    pub fn active(&self) -> bool {
        self.active
    }

    /// A stream entry ID: `[id]`.
    pub fn entry_id(&self, id: &str) -> String {
        if self.active {
            "[id]".into()
        } else {
            id.to_string()
        }
    }

    /// Milliseconds: `[ms]`.
    pub fn ms(&self, ms: i64) -> String {
        if self.active {
            "[ms]".into()
        } else {
            format!("{ms} ms")
        }
    }

    /// A timeline stamp: `t=[ms]`, or `t=  53 ms` padded as the seed's output is.
    pub fn stamp(&self, t_ms: i64) -> String {
        if self.active {
            "t=[ms]".into()
        } else {
            format!("t={t_ms:>4} ms")
        }
    }

    /// A count that differs between runs: `[n]`.
    pub fn count(&self, n: impl ToString) -> String {
        if self.active {
            "[n]".into()
        } else {
            n.to_string()
        }
    }

    /// A version CAS compares: an entry ID as a number (`ms*100000+seq`) varies, a business
    /// version does not.
    pub fn version(&self, v: i64) -> String {
        if self.active && v > 1_000_000 {
            "[v]".into()
        } else {
            v.to_string()
        }
    }
}

/// The shape of a mark on a slide's timeline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Glyph {
    Received,
    Published,
    Failed,
    Wrote,
    Stale,
    Overwrote,
    Crash,
    LockTaken,
    Released,
    Expired,
    SqlSent,
    SqlDone,
    SqlError,
    Outbox,
    OutboxFailed,
    Acked,
}

/// What an event adds to its process's lane on a slide.
#[derive(Clone, Debug, PartialEq)]
pub enum Drawing {
    /// Nothing drawn.
    Nothing,
    /// A mark with its label.
    Mark(Glyph, String),
    /// The process sat waiting for `waited_ms` before this event (a blocked read that found
    /// nothing): a bar ending at the event.
    Waited { waited_ms: f64 },
    /// A lock (or lease) taken, lasting at most `ttl_ms` as the scenario gives it (the slide
    /// scales it): a bar until it is let go, or drawn as expired after its TTL.
    Held { ttl_ms: u64, label: String },
    /// The lock taken before is let go; a mark when the release says something.
    LetGo { mark: Option<(Glyph, String)> },
    /// An order's step applied (`version` of order `order`): marked out of order when a later
    /// step of that order was applied before it.
    Applied { order: i64, version: i64, label: String },
}

/// What an event must follow when a snapshot lists a burst process by process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Causality {
    /// Nothing beyond its own process's earlier events.
    Free,
    /// It publishes the entry (a receive of it comes after).
    Publishes(String),
    /// It receives the entry (after its publish).
    Receives(String),
    /// It puts a list job (back) in its queue, or releases a lock (`lock <key>`): a take of
    /// it comes after.
    PutsBack(String),
    /// It takes a list job (after its push or put-back), or a lock (after its release).
    Takes(String),
    /// It puts a list job in its queue in reaction to what came before it (a gated push, made
    /// once the job before it was taken): after every earlier event, and a take of it after it.
    PutsBackAfterAll(String),
}

/// Which events of a many-order run a slide keeps when it shows only some orders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Belongs {
    /// It belongs to no order: always kept.
    Everywhere,
    /// It is about this order.
    Order(i64),
    /// It is about this stream entry (kept when the entry's order is shown).
    Entry(String),
}

/// A family of events: an enum, serialized with a `kind` tag as every event is, that knows its
/// words in both languages, its mark, and what it must follow in a snapshot.
pub trait Vocabulary: Serialize + DeserializeOwned + 'static {
    /// Its `kind` tags (the enum's variants in snake_case), to find the vocabulary of an event
    /// without decoding it. A unit test of each vocabulary checks them against the enum.
    const KINDS: &'static [&'static str];

    /// Its timeline line, or None for events the text report leaves to JSON and SVG.
    fn line(&self, actor: Actor, w: &Wording) -> Option<String>;

    /// What it adds to its lane on a slide.
    fn drawing(&self, w: &Wording) -> Drawing;

    /// What it must follow when a snapshot lists a burst by process (default: nothing).
    fn causality(&self) -> Causality {
        Causality::Free
    }

    /// Is it a publish attempt (hidden from the text timeline of labs that do not show
    /// publishing)? Default: no.
    fn is_publish(&self) -> bool {
        false
    }

    /// Which orders' slide keeps it (default: every slide).
    fn belongs(&self) -> Belongs {
        Belongs::Everywhere
    }

    /// Does a run's verdict rest on it (a probe, a dead letter, a phase that the verdict
    /// measures)? A picture too long to draw whole is drawn around such events
    /// (`labs::key_events`). Default: no — an event drawn with an alarm glyph (a crash, a
    /// failure, an overwrite) is key without saying so.
    fn is_key(&self) -> bool {
        false
    }

    /// The event in the record's form.
    fn event(&self) -> super::EventKind {
        super::EventKind::Family(FamilyEvent::encode(self))
    }
}

/// One decoded family event, its type erased: what the reporters ask of it.
pub trait Described {
    fn line(&self, actor: Actor, w: &Wording) -> Option<String>;
    fn drawing(&self, w: &Wording) -> Drawing;
    fn causality(&self) -> Causality;
    fn is_publish(&self) -> bool;
    fn belongs(&self) -> Belongs;
    fn is_key(&self) -> bool;
}

impl<V: Vocabulary> Described for V {
    fn line(&self, actor: Actor, w: &Wording) -> Option<String> {
        Vocabulary::line(self, actor, w)
    }
    fn drawing(&self, w: &Wording) -> Drawing {
        Vocabulary::drawing(self, w)
    }
    fn causality(&self) -> Causality {
        Vocabulary::causality(self)
    }
    fn is_publish(&self) -> bool {
        Vocabulary::is_publish(self)
    }
    fn belongs(&self) -> Belongs {
        Vocabulary::belongs(self)
    }
    fn is_key(&self) -> bool {
        Vocabulary::is_key(self)
    }
}

/// One vocabulary as a registry lists it.
pub struct Entry {
    kinds: &'static [&'static str],
    decode: fn(&FamilyEvent) -> Option<Box<dyn Described>>,
}

fn decode_boxed<V: Vocabulary>(e: &FamilyEvent) -> Option<Box<dyn Described>> {
    e.decode::<V>().map(|v| Box::new(v) as Box<dyn Described>)
}

/// The entry of vocabulary `V`.
pub const fn entry<V: Vocabulary>() -> Entry {
    Entry { kinds: V::KINDS, decode: decode_boxed::<V> }
}

/// Every vocabulary a build knows (in lists: the shared ones, each family's), so a reporter
/// can word any event.
pub struct Registry(pub &'static [&'static [Entry]]);

impl Registry {
    /// The decoded event, if a vocabulary knows its kind.
    pub fn describe(&self, e: &FamilyEvent) -> Option<Box<dyn Described>> {
        self.0.iter().flat_map(|l| l.iter()).find(|v| v.kinds.contains(&e.kind())).and_then(|v| (v.decode)(e))
    }

    /// Every kind tag the registry knows.
    pub fn kinds(&self) -> Vec<&'static str> {
        self.0.iter().flat_map(|l| l.iter()).flat_map(|v| v.kinds.iter().copied()).collect()
    }

    /// Kinds named by two vocabularies (a registry must have none).
    pub fn clashes(&self) -> Vec<&'static str> {
        let mut seen: Vec<&'static str> = Vec::new();
        let mut out = Vec::new();
        for k in self.kinds() {
            if seen.contains(&k) {
                out.push(k);
            }
            seen.push(k);
        }
        out
    }
}

/// A job as a text line names it: `created (v=1)`, or `#42 created (v=1)` in a lab with
/// several orders.
pub fn job_line_label(j: &Job, many_orders: bool) -> String {
    if many_orders {
        format!("#{} {j}", j.order)
    } else {
        j.to_string()
    }
}

/// A job as a mark names it: `created v1`, or `#42 created v1`.
pub fn job_mark_label(job: &Job, many_orders: bool) -> String {
    if many_orders {
        format!("#{} {} v{}", job.order, job.event_type, job.version)
    } else {
        format!("{} v{}", job.event_type, job.version)
    }
}

/// Check a vocabulary's [`Vocabulary::KINDS`] against what its events serialize to: every
/// sample's tag is listed, and every listed tag has a sample (for unit tests).
pub fn check_kinds<V: Vocabulary>(samples: &[V]) {
    let tags: Vec<String> = samples.iter().map(|s| FamilyEvent::encode(s).kind().to_string()).collect();
    for t in &tags {
        assert!(V::KINDS.contains(&t.as_str()), "{t} is not in KINDS");
    }
    for k in V::KINDS {
        assert!(tags.iter().any(|t| t == k), "no sample of {k}");
    }
    for s in samples {
        let e = FamilyEvent::encode(s);
        assert!(e.decode::<V>().is_some(), "{} does not decode back", e.kind());
    }
}
