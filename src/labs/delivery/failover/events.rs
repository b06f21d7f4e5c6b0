//! The failover lab's own events: the replica cut off from the primary's replication stream,
//! and promoted; with their words in both languages and their marks.

use crate::lang::pick;
use crate::timeline::vocabulary::{Drawing, Glyph, Vocabulary, Wording};
use crate::timeline::Actor;
use serde::{Deserialize, Serialize};

/// What the failover lab did to its servers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FailoverEvent {
    /// The replica stops receiving the primary's replication stream (`how`: the mechanism).
    LagWindow { how: String },
    /// The replica became the primary (`REPLICAOF NO ONE`), `behind_bytes` of replication
    /// stream short of the dead primary.
    ReplicaPromoted { behind_bytes: i64 },
}

impl Vocabulary for FailoverEvent {
    const KINDS: &'static [&'static str] = &["lag_window", "replica_promoted"];

    fn line(&self, a: Actor, w: &Wording) -> Option<String> {
        Some(match self {
            FailoverEvent::LagWindow { how } => crate::tr!(
                w.lang,
                "{a}: the replica stops receiving the replication stream ({how}); the primary still takes writes and acks",
                "{a}: replica ngừng nhận luồng replication ({how}); primary vẫn nhận ghi và ack"
            ),
            FailoverEvent::ReplicaPromoted { behind_bytes } => {
                let b = w.redact.count(behind_bytes);
                crate::tr!(
                    w.lang,
                    "{a}: REPLICAOF NO ONE → the replica is the primary now, {b} bytes of replication stream short",
                    "{a}: REPLICAOF NO ONE → replica lên làm primary, thiếu {b} byte luồng replication"
                )
            }
        })
    }

    fn drawing(&self, w: &Wording) -> Drawing {
        let t = |en, vi| pick(w.lang, en, vi);
        let (glyph, label) = match self {
            FailoverEvent::LagWindow { how } => {
                (Glyph::Failed, format!("{} ({})", t("replica link cut", "cắt link replica"), how))
            }
            FailoverEvent::ReplicaPromoted { behind_bytes } => (
                Glyph::Published,
                format!("{} ({behind_bytes} B {})", t("replica promoted", "replica lên primary"), t("behind", "thiếu")),
            ),
        };
        Drawing::Mark(glyph, label)
    }
}
