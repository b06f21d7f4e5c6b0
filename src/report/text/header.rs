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
        // A variant whose runs a race of timers decides has no row a snapshot can keep.
        .filter(|v| !(opts.redact.active() && v.timer_race))
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
    // The id column fits the longest id (at least 16 wide, as the tables have always been).
    let width = rows.iter().map(|(id, _)| id.chars().count()).max().unwrap_or(0).max(16);
    // Rows with the same columns share a header; each column fits its widest cell (at least 13).
    let mut start = 0;
    while start < rows.len() {
        let columns: Vec<&str> = rows[start].1.iter().map(|(h, _)| h.as_str()).collect();
        let same = |cells: &Vec<(String, String)>| cells.iter().map(|(h, _)| h.as_str()).eq(columns.iter().copied());
        let end = start + rows[start..].iter().take_while(|(_, cells)| same(cells)).count();
        let chars = |s: &str| s.chars().count();
        let widths: Vec<usize> = columns
            .iter()
            .enumerate()
            .map(|(i, h)| {
                rows[start..end].iter().map(|(_, cells)| chars(&cells[i].1)).fold(chars(h).max(13), usize::max)
            })
            .collect();
        let mut header = format!("  {:<width$}", pick(opts.lang, "variant", "biến thể"));
        for (h, w) in columns.iter().zip(&widths) {
            let _ = write!(header, " {h:>w$}");
        }
        let _ = writeln!(out, "{}", header.trim_end());
        for (id, cells) in &rows[start..end] {
            let mut line = format!("  {id:<width$}");
            for ((_, c), w) in cells.iter().zip(&widths) {
                let _ = write!(line, " {c:>w$}");
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
        start = end;
    }
}
