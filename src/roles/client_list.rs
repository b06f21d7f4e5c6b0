//! Where each role is, read from the server: a run goes on only when each role is where it
//! must be (`CLIENT LIST` shows the role's named connection, blocked in XREADGROUP or just
//! connected). Built on the same [`poll_until`] as the servers' readiness (`service::readiness`).

use super::RoleProcess;
use crate::error::{Context, Error};
use crate::service::readiness::{poll_until, Attempt, PollError};
use redis::aio::MultiplexedConnection;
use std::future::Future;
use std::time::Duration;

/// How long a role may take to get ready.
const TIMEOUT: Duration = Duration::from_secs(15);
const INTERVAL: Duration = Duration::from_millis(1);

/// What CLIENT LIST must show of a role's connection before the run goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientState {
    /// The named connection exists (a role that polls instead of blocking).
    Connected,
    /// Blocked in XREADGROUP: an entry added now goes to it.
    BlockedInXreadgroup,
    /// Blocked in any blocking command (BRPOP, BLMOVE, BLPOP…): a job pushed now goes to it.
    Blocked,
    /// Blocked in BLMOVE: a job pushed now goes to it.
    BlockedInBlmove,
}

impl ClientState {
    fn holds(self, client_line: &str) -> bool {
        match self {
            ClientState::Connected => true,
            ClientState::BlockedInXreadgroup => client_line.contains(" cmd=xreadgroup") && is_blocked(client_line),
            ClientState::Blocked => is_blocked(client_line),
            ClientState::BlockedInBlmove => client_line.contains(" cmd=blmove") && is_blocked(client_line),
        }
    }

    fn missing(self, timeout: Duration) -> String {
        let what = match self {
            ClientState::Connected => "not connected",
            ClientState::BlockedInXreadgroup => "not blocked in XREADGROUP",
            ClientState::Blocked => "not blocked in a blocking command",
            ClientState::BlockedInBlmove => "not blocked in BLMOVE",
        };
        let s = format!("{:.1}", timeout.as_secs_f64());
        format!("{what} after {} s", s.strip_suffix(".0").unwrap_or(&s))
    }

    /// Does a CLIENT LIST line (of the role's connection) show the role in this state?
    pub fn seen_in(self, client_line: &str) -> bool {
        self.holds(client_line)
    }
}

/// Is the client blocked (`flags=…b…` in its CLIENT LIST line)?
pub fn is_blocked(client_line: &str) -> bool {
    client_line.split(' ').any(|kv| kv.strip_prefix("flags=").is_some_and(|f| f.contains('b')))
}

/// Wait until `child`'s connection named `client_name` is in `want`, the child exits (its
/// stderr says why), or 15 s pass.
pub async fn wait_for_client(
    conn: &mut MultiplexedConnection,
    client_name: &str,
    want: ClientState,
    child: &RoleProcess,
) -> Result<(), Error> {
    wait_for_client_within(conn, client_name, want, child, TIMEOUT).await
}

/// [`wait_for_client`], for `timeout` (a worker's patience) instead of 15 s.
pub async fn wait_for_client_within(
    conn: &mut MultiplexedConnection,
    client_name: &str,
    want: ClientState,
    child: &RoleProcess,
    timeout: Duration,
) -> Result<(), Error> {
    let needle = format!(" name={client_name} ");
    let result = poll_until(timeout, INTERVAL, || {
        let mut conn = conn.clone();
        let needle = needle.clone();
        let exited = child.exited();
        async move {
            if let Some(detail) = exited {
                return Attempt::Abort(detail);
            }
            let list: Result<String, _> = redis::cmd("CLIENT").arg("LIST").query_async(&mut conn).await;
            match list {
                Ok(list) if list.lines().any(|l| l.contains(&needle) && want.holds(l)) => Attempt::Ready(()),
                Ok(_) => Attempt::Retry(want.missing(timeout)),
                Err(e) => Attempt::Abort(format!("CLIENT LIST: {e}")),
            }
        }
    })
    .await;
    result.map_err(|e| Error::RoleNotReady {
        actor: child.actor().to_string(),
        detail: match e {
            PollError::Aborted(detail) => detail,
            PollError::TimedOut { last } => last,
        },
    })
}

/// Wait until `check` says yes (every 10 ms, up to 15 s); `what` names the condition.
pub async fn until<F, Fut>(what: &str, mut check: F) -> Result<(), Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool, Error>>,
{
    let result = poll_until(TIMEOUT, Duration::from_millis(10), || {
        let fut = check();
        async move {
            match fut.await {
                Ok(true) => Attempt::Ready(()),
                Ok(false) => Attempt::Retry(format!("not after {} s", TIMEOUT.as_secs())),
                Err(e) => Attempt::Abort(e.to_string()),
            }
        }
    })
    .await;
    result.map_err(|e| Error::NotReady {
        what: what.to_string(),
        detail: match e {
            PollError::Aborted(detail) | PollError::TimedOut { last: detail } => detail,
        },
    })
}

/// Set the client name of a role's connection so [`wait_for_client`] can find it.
pub async fn name_connection(conn: &mut MultiplexedConnection, client_name: &str) -> Result<(), Error> {
    redis::cmd("CLIENT").arg("SETNAME").arg(client_name).query_async::<()>(conn).await.context("CLIENT SETNAME")
}

#[cfg(test)]
mod tests {
    #[test]
    fn blocked_flag_is_read_from_client_list() {
        assert!(super::is_blocked("id=5 addr=x name=ordlab-1-C1 age=0 flags=b db=0 cmd=xreadgroup"));
        assert!(!super::is_blocked("id=5 addr=x name=ordlab-1-C1 age=0 flags=N db=0 cmd=xreadgroup"));
    }
}
