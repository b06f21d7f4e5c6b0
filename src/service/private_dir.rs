//! Every local server lives in a private dir that is removed when its owner stops it. The dir
//! records its owner, so that a later run can tell whether it was left by a killed one.

use nix::unistd::{Gid, Uid, User};

use super::error::ServiceError;
use super::registry::{private_root, RunDir};

/// `Some(uid, gid)` of the `postgres` user when we are root (postgres refuses root).
pub(crate) fn postgres_owner() -> Result<Option<(Uid, Gid)>, ServiceError> {
    if !Uid::effective().is_root() {
        return Ok(None);
    }
    match User::from_name("postgres") {
        Ok(Some(u)) => Ok(Some((u.uid, u.gid))),
        _ => Err(ServiceError::NoPostgresUser),
    }
}

/// A private temp dir `ordlab-XXXXXX` under [`private_root`], with an `owner` file naming this
/// process and in the run's registry (so the reaper can reclaim it after a SIGKILL). When we are root it is handed to
/// the postgres user, who must reach files inside (so `$ORDLAB_TMPDIR` must be traversable
/// by that user).
pub(crate) fn private_dir() -> Result<RunDir, ServiceError> {
    let dir = RunDir::new_in(&private_root(), "ordlab-")?;
    if let Ok(Some((uid, gid))) = postgres_owner() {
        std::os::unix::fs::chown(dir.path(), Some(uid.as_raw()), Some(gid.as_raw()))
            .map_err(ServiceError::io("chown temp dir to postgres"))?;
    }
    Ok(dir)
}
