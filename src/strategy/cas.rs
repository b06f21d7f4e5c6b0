//! CAS by version: `UPDATE … WHERE id = $id AND version < $v`. A stale event finds a newer
//! version in the row and changes nothing (`UPDATE 0`), so the final state is right in any
//! order, as long as the version was born with the event and not assigned by the log.

use super::{Delivery, Handler};
use crate::connect::SCHEMA;
use crate::error::{Context, Error};
use crate::scenario::VersionSource;

pub async fn write(h: &mut Handler<'_>, d: &Delivery<'_>, source: VersionSource) -> Result<(), Error> {
    let version = match source {
        VersionSource::Business => d.job.version,
        VersionSource::EntryId => entry_id_version(d.entry_id).unwrap_or(0),
    };
    let sql = format!("UPDATE {SCHEMA}.orders SET status = $1, version = $2 WHERE id = $3 AND version < $2");
    let rows = h.pg.execute(&sql, &[&d.job.event_type, &version, &d.job.order]).await.context("CAS UPDATE")?;
    h.wrote(d, Some(version), rows);
    Ok(())
}

/// A stream entry ID `<ms>-<seq>` as one number, `ms * 100000 + seq`: the order of the log,
/// which is the order of XADD, not the order of the business.
pub fn entry_id_version(entry_id: &str) -> Option<i64> {
    let (ms, seq) = entry_id.split_once('-')?;
    Some(ms.parse::<i64>().ok()? * 100_000 + seq.parse::<i64>().ok()?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn entry_id_becomes_a_number_in_log_order() {
        assert_eq!(super::entry_id_version("1792591555249-0"), Some(179259155524900000));
        assert_eq!(super::entry_id_version("5-7"), Some(500007));
        assert!(super::entry_id_version("5-7").unwrap() < super::entry_id_version("6-0").unwrap());
        assert_eq!(super::entry_id_version("garbage"), None);
    }
}
