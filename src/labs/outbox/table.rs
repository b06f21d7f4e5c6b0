//! The outbox table of the transactional outbox: the state change and its outbox row commit
//! in one transaction, and a dispatcher later publishes the rows. The labs and the dispatcher
//! role share this table and its one event (a dispatcher's polling round) and nothing else.

use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::lang::Lang;
use crate::orders::EventSpec;
use serde::{Deserialize, Serialize};

/// Create the table if needed and write `events` as rows 1..n, in order (none: empty).
pub async fn fill(pg: &tokio_postgres::Client, events: &[EventSpec]) -> Result<(), Error> {
    pg.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {SCHEMA}.outbox (
            id bigserial PRIMARY KEY, aggregate_id bigint NOT NULL, event_type text NOT NULL,
            version bigint NOT NULL, published_at timestamptz);
         TRUNCATE {SCHEMA}.outbox RESTART IDENTITY"
    ))
    .await
    .context("reset outbox")?;
    for e in events {
        pg.execute(
            &format!("INSERT INTO {SCHEMA}.outbox (aggregate_id, event_type, version) VALUES ($1, $2, $3)"),
            &[&e.order, &e.event_type, &e.version],
        )
        .await
        .context("fill outbox")?;
    }
    Ok(())
}

/// Rows in the outbox, published or not.
pub async fn row_count(pg: &tokio_postgres::Client) -> Result<i64, Error> {
    let row = pg.query_one(&format!("SELECT count(*) FROM {SCHEMA}.outbox"), &[]).await.context("count outbox")?;
    Ok(row.get(0))
}

/// What an outbox dispatcher did in one polling round, with its words and mark.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OutboxEvent {
    /// One polling round of an outbox dispatcher: rows published, failed, and held back
    /// behind an earlier failure of the same key.
    OutboxRound { round: u32, published: Vec<i64>, failed: Vec<i64>, held_back: Vec<i64> },
}

impl crate::timeline::vocabulary::Vocabulary for OutboxEvent {
    const KINDS: &'static [&'static str] = &["outbox_round"];

    fn line(&self, a: crate::timeline::Actor, w: &crate::timeline::vocabulary::Wording) -> Option<String> {
        let OutboxEvent::OutboxRound { round, published, failed, held_back } = self;
        Some(outbox_round(a, *round, published, failed, held_back, w.lang))
    }

    fn drawing(&self, w: &crate::timeline::vocabulary::Wording) -> crate::timeline::vocabulary::Drawing {
        let OutboxEvent::OutboxRound { round, published, failed, held_back } = self;
        let (glyph, label) = outbox_mark(*round, published, failed, held_back, w.lang);
        crate::timeline::vocabulary::Drawing::Mark(glyph, label)
    }
}

fn outbox_round(
    a: crate::timeline::Actor,
    round: u32,
    published: &[i64],
    failed: &[i64],
    held_back: &[i64],
    lang: Lang,
) -> String {
    let rows = |v: &[i64]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
        }
    };
    let (r, p, f, h) = match lang {
        Lang::En => ("round", "published rows", "failed rows", "held back rows"),
        Lang::Vi => ("vòng", "publish row", "lỗi row", "giữ lại row"),
    };
    let mut line = format!("{a} {r} {round}: {p} {} · {f} {}", rows(published), rows(failed));
    if !held_back.is_empty() {
        line.push_str(&format!(" · {h} {}", rows(held_back)));
    }
    line
}

fn outbox_mark(
    round: u32,
    published: &[i64],
    failed: &[i64],
    held_back: &[i64],
    lang: Lang,
) -> (crate::timeline::vocabulary::Glyph, String) {
    let (r, p, f, h) = match lang {
        Lang::En => ("round", "published", "failed", "held back"),
        Lang::Vi => ("vòng", "publish", "lỗi", "giữ lại"),
    };
    let mut label = format!("{r} {round}: {p} {}", order_rows(published));
    if !failed.is_empty() {
        label.push_str(&format!("; {f} {}", order_rows(failed)));
    }
    if !held_back.is_empty() {
        label.push_str(&format!("; {h} {}", order_rows(held_back)));
    }
    (
        if failed.is_empty() {
            crate::timeline::vocabulary::Glyph::Outbox
        } else {
            crate::timeline::vocabulary::Glyph::OutboxFailed
        },
        label,
    )
}

fn order_rows(rows: &[i64]) -> String {
    if rows.is_empty() {
        "-".to_string()
    } else {
        rows.iter().map(|r| format!("#{r}")).collect::<Vec<_>>().join(" ")
    }
}
