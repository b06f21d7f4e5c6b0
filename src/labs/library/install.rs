//! Pinned installs: the version a scenario names is installed once into ordlab's cache
//! (`~/.cache/ordlab/libraries/python/rq-2.12.0/`, a venv; `…/node/bullmq-6.7.0/`, an npm
//! prefix) and reused by every later run. Two versions of one library live side by side, so a
//! lab can run both.
//!
//! An install is finished when its `ordlab-installed.json` exists (the versions of the library
//! and its client libraries, as the package manager installed them); a lock file keeps two
//! ordlab processes from installing the same one at once.

use super::manifest::{LibraryRef, Manifest, Runtime};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A library installed at its pinned version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installed {
    /// Its install dir.
    pub home: PathBuf,
    /// Comes first on the adapter commands' PATH (the venv's `bin/`, `node_modules/.bin`).
    pub bin: PathBuf,
    /// The library and each client library with the version installed: `[("rq", "2.12.0"),
    /// ("redis", "8.1.0")]`.
    pub versions: Vec<(String, String)>,
    /// What was asked of the package manager (`rq==2.12.0`, `redis==8.2.0`): an install made
    /// for other pins is made again.
    #[serde(default)]
    pub requirements: Vec<String>,
}

impl Installed {
    /// `rq 2.12.0, redis 8.1.0`.
    pub fn shown(&self) -> String {
        self.versions.iter().map(|(n, v)| format!("{n} {v}")).collect::<Vec<_>>().join(", ")
    }

    /// The environment its commands run with: PATH (and NODE_PATH for Node).
    pub fn env(&self) -> Vec<(String, String)> {
        let path = std::env::var("PATH").unwrap_or_default();
        let mut env = vec![("PATH".to_string(), format!("{}:{path}", self.bin.display()))];
        if self.bin.ends_with("node_modules/.bin") {
            env.push(("NODE_PATH".into(), self.home.join("node_modules").display().to_string()));
        } else if self.bin == self.home.join("bin") {
            env.push(("VIRTUAL_ENV".into(), self.home.display().to_string()));
        }
        env
    }
}

/// Why a library could not be installed: one line naming it and what to do.
#[derive(Debug, thiserror::Error)]
#[error("library {library} cannot be installed: {detail}")]
pub struct InstallError {
    pub library: String,
    pub detail: String,
}

const DONE: &str = "ordlab-installed.json";

/// `~/.cache/ordlab/libraries/<runtime>/<name>-<version>`.
pub fn home_of(manifest: &Manifest, library: &LibraryRef) -> PathBuf {
    let runtime = match manifest.runtime {
        Runtime::Python => "python",
        Runtime::Node => "node",
        Runtime::Debian => "debian",
    };
    crate::service::cache_root().join("libraries").join(runtime).join(format!("{}-{}", library.name, library.version))
}

/// The install of `library` at its version, made now if it is not there yet.
pub async fn ensure(manifest: &Manifest, library: &LibraryRef) -> Result<Installed, InstallError> {
    let home = home_of(manifest, library);
    let fail = |detail: String| InstallError { library: library.shown(), detail };
    if manifest.runtime == Runtime::Debian {
        // Nothing of ordlab's to make: the system's package, checked every time (apt may
        // have changed it).
        return debian(manifest, library, &home).await.map_err(fail);
    }
    let wanted = requirements(manifest, library);
    if let Some(done) = read_done(&home, &wanted) {
        return Ok(done);
    }
    std::fs::create_dir_all(&home).map_err(|e| fail(format!("cannot create {}: {e}", home.display())))?;
    let lock_file = std::fs::File::create(home.with_extension("lock")).map_err(|e| fail(format!("lock: {e}")))?;
    let lock = tokio::task::spawn_blocking(move || {
        nix::fcntl::Flock::lock(lock_file, nix::fcntl::FlockArg::LockExclusive).map_err(|(_, e)| e)
    })
    .await
    .map_err(|e| fail(e.to_string()))?
    .map_err(|e| fail(format!("lock: {e}")))?;
    // Another ordlab may have finished it while this one waited.
    if let Some(done) = read_done(&home, &wanted) {
        return Ok(done);
    }
    let installed = match manifest.runtime {
        Runtime::Python => python(manifest, library, &home).await,
        Runtime::Node => node(manifest, library, &home).await,
        Runtime::Debian => debian(manifest, library, &home).await,
    }
    .map_err(fail)?;
    let installed = Installed { requirements: wanted, ..installed };
    let json = serde_json::to_string_pretty(&installed).expect("plain data");
    std::fs::write(home.join(DONE), json).map_err(|e| fail(format!("write {DONE}: {e}")))?;
    drop(lock);
    Ok(installed)
}

/// The finished install in `home`, if it was made for `wanted`.
fn read_done(home: &Path, wanted: &[String]) -> Option<Installed> {
    let done: Installed = serde_json::from_str(&std::fs::read_to_string(home.join(DONE)).ok()?).ok()?;
    (done.requirements == wanted).then_some(done)
}

/// What the package manager is asked for: the library at its version, and what the manifest
/// installs beside it.
fn requirements(manifest: &Manifest, library: &LibraryRef) -> Vec<String> {
    let pinned = match manifest.runtime {
        Runtime::Python => format!("{}=={}", manifest.package, library.version),
        Runtime::Node => format!("{}@{}", manifest.package, library.version),
        Runtime::Debian => format!("{} {}", manifest.package, library.version),
    };
    std::iter::once(pinned).chain(manifest.also.iter().cloned()).collect()
}

/// Run `program args`, its output kept; Err: the command and its last output line.
async fn step(program: &Path, args: &[&str]) -> Result<String, String> {
    let shown = format!("{} {}", program.display(), args.join(" "));
    let out = tokio::process::Command::from(crate::service::process::owned_command(program))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| format!("{shown}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output").trim().to_string();
        return Err(format!("{shown} failed ({}): {last}", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

async fn python(manifest: &Manifest, library: &LibraryRef, home: &Path) -> Result<Installed, String> {
    let home_s = home.display().to_string();
    step(Path::new("python3"), &["-m", "venv", "--clear", &home_s]).await?;
    let pip = home.join("bin/pip");
    let pinned = format!("{}=={}", manifest.package, library.version);
    let mut args = vec!["install", "--disable-pip-version-check", "-q", &pinned];
    args.extend(manifest.also.iter().map(String::as_str));
    step(&pip, &args).await?;
    // `celery[redis]` is installed as `celery`.
    let package = manifest.package.split('[').next().unwrap_or(&manifest.package);
    let mut names = vec![package];
    names.extend(manifest.clients.iter().map(String::as_str));
    let script = "import sys, importlib.metadata as m\nfor n in sys.argv[1:]: print(n, m.version(n))";
    let mut args = vec!["-c", script];
    args.extend(names.iter().copied());
    let listed = step(&home.join("bin/python"), &args).await?;
    Ok(Installed {
        home: home.to_path_buf(),
        bin: home.join("bin"),
        versions: pairs(&listed),
        requirements: Vec::new(),
    })
}

async fn node(manifest: &Manifest, library: &LibraryRef, home: &Path) -> Result<Installed, String> {
    let home_s = home.display().to_string();
    let pinned = format!("{}@{}", manifest.package, library.version);
    let mut args = vec!["install", "--prefix", &home_s, "--no-audit", "--no-fund", "--silent", &pinned];
    args.extend(manifest.also.iter().map(String::as_str));
    step(Path::new("npm"), &args).await?;
    let mut listed = String::new();
    for name in std::iter::once(&manifest.package).chain(&manifest.clients) {
        let package = home.join("node_modules").join(name).join("package.json");
        let text = std::fs::read_to_string(&package).map_err(|e| format!("{}: {e}", package.display()))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", package.display()))?;
        listed.push_str(&format!("{name} {}\n", v["version"].as_str().unwrap_or("?")));
    }
    Ok(Installed {
        home: home.to_path_buf(),
        bin: home.join("node_modules/.bin"),
        versions: pairs(&listed),
        requirements: Vec::new(),
    })
}

/// A Debian package: installed (by `scripts/setup.sh`) at the pinned upstream version? Its
/// version and its clients' as dpkg knows them (`6.4.1+dfsg-1` is upstream `6.4.1`).
async fn debian(manifest: &Manifest, library: &LibraryRef, home: &Path) -> Result<Installed, String> {
    let mut listed = String::new();
    for name in std::iter::once(&manifest.package).chain(&manifest.clients) {
        let out = tokio::process::Command::new("dpkg-query")
            .args(["-W", "-f", "${db:Status-Status} ${Version}", name])
            .output()
            .await
            .map_err(|e| format!("dpkg-query: {e} (a Debian package needs Debian or Ubuntu)"))?;
        let said = String::from_utf8_lossy(&out.stdout).to_string();
        let version = said.strip_prefix("installed ").map(str::trim).filter(|_| out.status.success());
        let Some(version) = version else {
            return Err(format!("Debian's {name} is not installed: run `just setup` (apt-get install {name})"));
        };
        listed.push_str(&format!("{name} {version}\n"));
    }
    let versions = pairs(&listed);
    let upstream = upstream_version(&versions[0].1);
    if upstream != library.version {
        return Err(format!(
            "Debian's {} is {} (upstream {upstream}), the scenario pins {}",
            manifest.package, versions[0].1, library.version
        ));
    }
    let _ = home;
    Ok(Installed {
        home: PathBuf::from(format!("dpkg:{}", manifest.package)),
        bin: PathBuf::from("/usr/bin"),
        versions,
        requirements: requirements(manifest, library),
    })
}

/// `6.4.1+dfsg-1` → `6.4.1`; `1:2.3-4` → `2.3`.
fn upstream_version(debian: &str) -> &str {
    let v = debian.split_once(':').map_or(debian, |(_, v)| v);
    let v = v.rsplit_once('-').map_or(v, |(v, _)| v);
    v.split(['+', '~']).next().unwrap_or(v)
}

/// `name version` lines.
fn pairs(listed: &str) -> Vec<(String, String)> {
    listed
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_debian_version_s_upstream_part_is_what_a_scenario_pins() {
        assert_eq!(super::upstream_version("6.4.1+dfsg-1"), "6.4.1");
        assert_eq!(super::upstream_version("1:4.8.0-1"), "4.8.0");
        assert_eq!(super::upstream_version("2.2.5-1"), "2.2.5");
    }

    #[test]
    fn package_listings_become_pairs() {
        assert_eq!(
            super::pairs("rq 2.12.0\nredis 8.1.0\n"),
            vec![("rq".to_string(), "2.12.0".to_string()), ("redis".into(), "8.1.0".into())]
        );
    }
}
