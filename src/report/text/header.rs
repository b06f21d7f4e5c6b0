//! The lines around the variants: the environment header every report starts with (what ran,
//! where, with which seed), and the side-by-side table of labs that compare their variants.

use super::TextOptions;
use crate::lang::pick;
use crate::report::{Environment, LabReport};
use std::fmt::Write;

pub fn environment(out: &mut String, env: &Environment, opts: &TextOptions) {
    if opts.redact.active() {
        let _ = writeln!(out, "ordlab [version] · backend [backend] · Redis [version] · PostgreSQL [version]");
        let _ = writeln!(
            out,
            "time scale {} · IDs and times redacted; events less than {} ms apart in different processes listed by process",
            env.time_scale,
            crate::report::redact::BURST_US / 1000
        );
        return;
    }
    let server = if env.redis_server.is_empty() { String::new() } else { format!(" ({})", env.redis_server) };
    let _ = writeln!(
        out,
        "ordlab {} (commit {}) · backend {} · Redis {}{server} · PostgreSQL {} · {}: {}",
        env.ordlab_version,
        env.git_commit,
        env.backend,
        env.redis_version,
        env.postgres_version,
        pick(opts.lang, "lock release", "nhả lock"),
        env.lock_release
    );
    let _ = writeln!(
        out,
        "{} · {} · seed {} · time scale {}",
        if env.command_line.is_empty() { "ordlab" } else { &env.command_line },
        env.date,
        env.seed,
        env.time_scale
    );
}

/// For labs that compare their variants (`load`): one table of every variant's run 1.
pub fn side_by_side(out: &mut String, report: &LabReport, opts: &TextOptions) {
    let rows: Vec<(&str, Vec<(String, String)>)> = report
        .variants
        .iter()
        .filter_map(|v| {
            let r = v.run_records.first()?;
            let cells = v.procedure.table_row(r, opts.lang)?;
            Some((v.id.as_str(), cells.into_iter().map(|(h, c)| (h, opts.redact.line(&c))).collect()))
        })
        .collect();
    if rows.len() < 2 {
        return;
    }
    let title = pick(opts.lang, "side by side (run 1 of each variant)", "so sánh (lần 1 của từng biến thể)");
    let _ = writeln!(out, "\n### {title}");
    let mut header = format!("  {:<16}", pick(opts.lang, "variant", "biến thể"));
    for (h, _) in &rows[0].1 {
        let _ = write!(header, " {h:>13}");
    }
    let _ = writeln!(out, "{}", header.trim_end());
    for (id, cells) in &rows {
        let mut line = format!("  {id:<16}");
        for (_, c) in cells {
            let _ = write!(line, " {c:>13}");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}
