//! An adapter's one-shot commands: the enqueue command runs through the interposer as the
//! producer (the timeline shows the library's own client commands), the state command through
//! one that records nothing (it only reads, after the run). Each must exit 0 within its time;
//! otherwise one line names the library, the command and its last output line.
//!
//! Every command gets `ORDLAB_REDIS_URL` (its interposed Redis, the library's database),
//! `ORDLAB_PG_URL`, `ORDLAB_JOBS` (the lab's jobs as JSON) and the install's PATH.

use crate::error::Error;
use crate::interposer::redis::RedisSetup;
use crate::interposer::{upstream_of, Endpoint, WorkerTap};
use crate::timeline::{Actor, RawEvent};
use std::time::Duration;
use tokio::sync::mpsc;

/// The Redis database a library's keys live in (emptied before each run): its keys are its
/// own (`rq:*`, `bull:*`), not under the run's prefix.
pub const LIBRARY_DB: u32 = 9;

/// How long a one-shot command may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Where the servers are and what every adapter command is told.
pub struct Call<'a> {
    pub library: &'a str,
    pub redis_url: &'a str,
    pub pg_config: &'a str,
    pub env: &'a [(String, String)],
}

/// Run `command` to its end through an interposer of `actor`, its exchanges sent to `sink`
/// (None: recorded nowhere); its stdout.
pub async fn run_once(
    call: &Call<'_>,
    what: &str,
    command: &[String],
    actor: Actor,
    sink: Option<mpsc::UnboundedSender<RawEvent>>,
) -> Result<String, Error> {
    let broke = |detail: String| Error::Library { library: call.library.to_string(), detail };
    let (tx, _unrecorded) = mpsc::unbounded_channel();
    let tap = WorkerTap::new(actor, Default::default(), sink.unwrap_or(tx), Default::default());
    let io = |e: std::io::Error| Error::Io { context: "start the interposer".into(), source: e };
    let up = upstream_of(call.redis_url).await.map_err(io)?;
    let setup = RedisSetup {
        client_name: None,
        key_prefix: String::new(),
        auth: crate::interposer::redis_auth(call.redis_url),
    };
    let redis = Endpoint::redis(up, tap.clone(), setup).await.map_err(io)?;
    let (pg_url, pg) = crate::interposer::postgres_endpoint(call.pg_config, &tap).await?;
    let mut cmd = tokio::process::Command::from(crate::service::process::owned_command(&command[0]));
    cmd.args(&command[1..])
        .envs(call.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("ORDLAB_REDIS_URL", format!("redis://{}/{LIBRARY_DB}", redis.addr))
        .env("ORDLAB_PG_URL", pg_url)
        .env("PYTHONUNBUFFERED", "1")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let shown = command.join(" ");
    let out = match tokio::time::timeout(TIMEOUT, cmd.output()).await {
        Err(_) => return Err(broke(format!("{what} `{shown}` did not finish in {} s", TIMEOUT.as_secs()))),
        Ok(Err(e)) => {
            return Err(broke(format!("{what} `{shown}` cannot start: {e} (is the adapter's program installed?)")))
        }
        Ok(Ok(out)) => out,
    };
    // The process has exited: its connections' closes (and what it left unanswered) are
    // recorded before the endpoints go.
    redis.close().await;
    if let Some(pg) = pg {
        pg.close().await;
    }
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output").trim();
        return Err(broke(format!("{what} `{shown}` failed ({}): {last}", out.status)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The state command's stdout as `{"jobs": {...}}`; Err: one line saying what it printed.
pub fn parse_state(
    library: &str,
    stdout: &str,
) -> Result<std::collections::BTreeMap<String, super::checker::LibraryState>, Error> {
    #[derive(serde::Deserialize)]
    struct State {
        jobs: std::collections::BTreeMap<String, super::checker::LibraryState>,
    }
    let line = stdout.lines().rev().find(|l| l.trim_start().starts_with('{')).unwrap_or("");
    serde_json::from_str::<State>(line).map(|s| s.jobs).map_err(|e| Error::Library {
        library: library.to_string(),
        detail: format!(
            "the state command printed no JSON of the form {{\"jobs\": {{\"<key>\": {{\"status\": \"…\"}}}}}} ({e}); it printed: {:?}",
            stdout.trim().chars().take(120).collect::<String>()
        ),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_state_is_the_last_json_line_or_one_line_saying_what_came() {
        let s =
            super::parse_state("rq", "warming up\n{\"jobs\": {\"job-1\": {\"status\": \"queued\", \"places\": []}}}\n")
                .unwrap();
        assert_eq!(s["job-1"].status, "queued");
        assert_eq!(s["job-1"].places, Some(vec![]));
        let e = super::parse_state("rq", "Traceback …\n").unwrap_err().to_string();
        assert!(e.starts_with("library rq: the state command printed no JSON"), "{e}");
        assert!(!e.contains('\n'));
    }
}
