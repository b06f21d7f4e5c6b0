//! CAS by version: `UPDATE … WHERE id = $id AND version < $v`. A stale event finds a newer
//! version in the row and changes nothing (`UPDATE 0`), so the final state is right in any
//! order, as long as the version was born with the event and not assigned by the log.

use super::{Delivery, Handler, StrategyKind};
use crate::handler::Described;
use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::lang::{pick, Lang};
use serde::{Deserialize, Serialize};

/// `strategy = { kind = "cas", version = "business" | "entry-id" }`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CasSpec {
    #[serde(default)]
    pub version: VersionSource,
}

/// Which number CAS compares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VersionSource {
    /// The business version carried in the event (born with it at the source).
    #[default]
    Business,
    /// The stream entry ID as a number, `ms * 100000 + seq` (born at XADD time).
    EntryId,
}

impl Described for CasSpec {
    fn describe(&self, lang: Lang) -> String {
        match self.version {
            VersionSource::Business => pick(lang, "CAS on the business version", "CAS theo version nghiệp vụ"),
            VersionSource::EntryId => {
                pick(lang, "CAS on the entry ID (ms*100000+seq)", "CAS theo entry ID (ms*100000+seq)")
            }
        }
        .to_string()
    }

    fn short(&self) -> String {
        match self.version {
            VersionSource::Business => "CAS (business version)",
            VersionSource::EntryId => "CAS (entry ID)",
        }
        .to_string()
    }
}

impl StrategyKind for CasSpec {
    async fn apply(&self, h: &mut Handler<'_>, d: &Delivery<'_>) -> Result<(), Error> {
        h.work(d).await;
        let version = match self.version {
            VersionSource::Business => d.job.version,
            VersionSource::EntryId => crate::streams::id_as_number(d.entry_id).unwrap_or(0),
        };
        let sql = format!("UPDATE {SCHEMA}.orders SET status = $1, version = $2 WHERE id = $3 AND version < $2");
        let rows = h.pg.execute(&sql, &[&d.job.event_type, &version, &d.job.order]).await.context("CAS UPDATE")?;
        h.wrote(d, Some(version), rows);
        Ok(())
    }

    /// A conditional write (`WHERE version < $v`): a stale event changes nothing.
    fn never_lowers_version(&self) -> bool {
        true
    }
}
