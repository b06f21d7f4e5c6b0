//! What an adapter folder says of its library: how to install it, what it promises, and the
//! three commands ordlab runs. `examples/libraries/<name>/library.toml` is read before any
//! server starts; a missing or malformed one is one line naming the file and the key.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `library = { name = "rq", version = "2.12.0" }` in a scenario's `[setup]`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LibraryRef {
    pub name: String,
    pub version: String,
    /// The adapter folder (default `examples/libraries/<name>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
}

impl LibraryRef {
    pub fn adapter_dir(&self) -> PathBuf {
        PathBuf::from(self.adapter.clone().unwrap_or_else(|| format!("examples/libraries/{}", self.name)))
    }

    /// `rq 2.12.0`.
    pub fn shown(&self) -> String {
        format!("{} {}", self.name, self.version)
    }
}

/// How a library is installed at a pinned version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Runtime {
    /// `pip install <package>==<version>` into a venv of its own.
    Python,
    /// `npm install <package>@<version>` into a prefix of its own.
    Node,
    /// A Debian package (`ruby-sidekiq`), installed by `scripts/setup.sh` with apt-get like the
    /// other system packages; ordlab checks that the installed version is the one pinned.
    Debian,
}

/// The server a library keeps its jobs in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// Its own Redis database ([`super::adapter::LIBRARY_DB`]), emptied before each run.
    #[default]
    Redis,
    /// Its own PostgreSQL database (`ordlab_library`), made afresh for each run.
    Postgres,
}

/// When a worker process is ready for the lab's jobs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Ready {
    /// Ready once the interposer has passed the reply to a command of the worker's that this
    /// names (a Redis command, a statement's first keyword: `LISTEN`); None: once one of its
    /// Redis connections waits in a blocking command (`CLIENT LIST`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// With `after`: a regular expression the command's words must match too (`(?i)skip\s+locked`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
}

impl Ready {
    /// The trigger that watches for the readiness reply, if the manifest names one.
    pub fn trigger(&self) -> Option<crate::fault::Trigger> {
        self.after.as_ref().map(|command| crate::fault::Trigger::Command {
            command: Some(command.clone()),
            pattern: self.pattern.clone(),
            moment: crate::fault::Moment::Reply,
            of: None,
        })
    }
}

/// How often a job runs, as the library's documentation promises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Runs {
    /// Never twice; a crash may leave it unrun.
    AtMostOnce,
    /// At least once; a crash may run it again.
    AtLeastOnce,
    /// Exactly once (pg-boss's README: "exactly-once job delivery").
    ExactlyOnce,
}

impl Runs {
    pub fn name(self) -> &'static str {
        match self {
            Runs::AtMostOnce => "at-most-once",
            Runs::AtLeastOnce => "at-least-once",
            Runs::ExactlyOnce => "exactly-once",
        }
    }
}

/// The guarantee a library documents, that its outcome is judged against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Guarantee {
    pub runs: Runs,
    /// The docs say a crash can lose a job without a trace (true for Sidekiq's basic fetch);
    /// false: a job is run, or the library reports it failed.
    #[serde(default)]
    pub silent_loss: bool,
    /// Jobs of one queue start in the order they were enqueued (with one worker).
    #[serde(default)]
    pub fifo: bool,
    /// It keeps no record of a completed job (Sidekiq's OSS API knows only queued, scheduled,
    /// retrying, dead and busy jobs): a job its state command cannot find ran to its end, or
    /// was lost, as the ledger says.
    #[serde(default)]
    pub forgets_completed: bool,
}

/// What the library does, by its docs, with a job whose worker died holding it.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Recovery {
    /// After how long, in seconds.
    pub after_s: f64,
    /// What it does then, in a few words (English).
    pub how: String,
}

/// `library.toml`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub name: String,
    pub runtime: Runtime,
    /// The registry package pinned to the scenario's version.
    pub package: String,
    /// Packages installed beside it, pinned (`kombu==5.7.0`, `ioredis@5.8.2`).
    #[serde(default)]
    pub also: Vec<String>,
    /// Client libraries it brings (the report names their installed versions).
    #[serde(default)]
    pub clients: Vec<String>,
    #[serde(default)]
    pub backend: Backend,
    #[serde(default)]
    pub ready: Ready,
    pub guarantee: Guarantee,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    /// Enqueues `ORDLAB_JOBS` with the library's client API, then exits 0.
    pub enqueue: Vec<String>,
    /// The library's worker process; runs until it is killed.
    pub worker: Vec<String>,
    /// Prints `{"jobs": {"<key>": {"status": …, "places": […]}}}` and exits 0.
    pub state: Vec<String>,
    /// Optional: prints `{"<sha1>": "<script name>"}` for the Lua scripts the library loads,
    /// so the timeline names each `EVALSHA` (BullMQ's `moveToActive`) and a fault can too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scripts: Vec<String>,
    /// Optional: runs the library's own periodic recovery once, now, as it runs
    /// `ORDLAB_RECOVER_AFTER_S` seconds later (RQ's `StartedJobRegistry.cleanup(timestamp=…)`),
    /// for a lab whose recovery time the library hard-codes in minutes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recover: Vec<String>,
}

/// Why an adapter's manifest cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error(
        "library {library}: {path} is missing: an adapter folder needs library.toml (see README, \"Add your library\")"
    )]
    Missing { library: String, path: String },
    #[error("library {library}: {path}: {detail}")]
    Malformed { library: String, path: String, detail: String },
}

impl Manifest {
    /// Read `<adapter>/library.toml` of `library`.
    pub fn read(library: &LibraryRef) -> Result<Manifest, ManifestError> {
        let path = library.adapter_dir().join("library.toml");
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(&path)
            .map_err(|_| ManifestError::Missing { library: library.name.clone(), path: shown.clone() })?;
        Manifest::parse(&text, &library.name, &shown)
    }

    /// Parse a manifest's text; `library` and `path` name it in errors.
    pub fn parse(text: &str, library: &str, path: &str) -> Result<Manifest, ManifestError> {
        let malformed =
            |detail: String| ManifestError::Malformed { library: library.to_string(), path: path.to_string(), detail };
        let m: Manifest = toml::from_str(text).map_err(|e| malformed(e.message().trim().to_string()))?;
        if m.name != library {
            return Err(malformed(format!("name = {:?}, but the scenario names {library:?}", m.name)));
        }
        for (key, command) in [("enqueue", &m.enqueue), ("worker", &m.worker), ("state", &m.state)] {
            if command.first().is_none_or(|p| p.trim().is_empty()) {
                return Err(malformed(format!("{key} is empty: give the program and its arguments")));
            }
        }
        if let Some(Err(e)) = m.ready.trigger().map(|t| t.check()) {
            return Err(malformed(format!("ready: {e}")));
        }
        if m.backend == Backend::Postgres && m.ready.after.is_none() {
            return Err(malformed(
                "backend = \"postgres\" needs ready = { after = \"…\" }: the statement after which a worker takes jobs (LISTEN, its fetch)".into(),
            ));
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RQ: &str = r#"
name = "rq"
runtime = "python"
package = "rq"
clients = ["redis"]
guarantee = { runs = "at-most-once" }
recovery = { after_s = 60, how = "fails it" }
enqueue = ["python3", "enqueue.py"]
worker = ["worker.sh"]
state = ["python3", "state.py"]
"#;

    #[test]
    fn a_manifest_parses_and_names_its_guarantee() {
        let m = Manifest::parse(RQ, "rq", "x/library.toml").unwrap();
        assert_eq!(
            m.guarantee,
            Guarantee { runs: Runs::AtMostOnce, silent_loss: false, fifo: false, forgets_completed: false }
        );
        assert_eq!(m.recovery.unwrap().after_s, 60.0);
    }

    #[test]
    fn a_broken_manifest_is_one_line_naming_the_file() {
        let e = Manifest::parse(RQ, "celery", "x/library.toml").unwrap_err().to_string();
        assert_eq!(e, "library celery: x/library.toml: name = \"rq\", but the scenario names \"celery\"");
        let e = Manifest::parse(&RQ.replace("[\"worker.sh\"]", "[]"), "rq", "x/library.toml").unwrap_err();
        assert!(e.to_string().contains("worker is empty"), "{e}");
        let e = Manifest::parse(&RQ.replace("at-most-once", "twice"), "rq", "x/library.toml").unwrap_err();
        assert!(e.to_string().starts_with("library rq: x/library.toml: unknown variant `twice`"), "{e}");
        assert!(!e.to_string().contains('\n'));
    }
}
