//! The page's footer: a key to the bars and marks present in this run, and the run's final
//! state with its verdict badge.

use super::glyphs::{glyph, GREEN, GREY, INK, LOCK, LOCK_H, MUTED, RED, SQL, WORK};
use super::layout::{esc, text_width, wrap};
use super::model::{BarKind, Glyph, Timeline};
use super::{MARGIN, WIDTH};
use crate::checker::Verdict;
use crate::labs::{FinalItem, RunRecord};
use crate::lang::{pick, Lang};
use std::fmt::Write;

/// The bars present, as (kind, label).
fn bar_keys(tl: &Timeline, lang: Lang) -> Vec<(&'static str, &'static str)> {
    let t = |en, vi| pick(lang, en, vi);
    let mut items = Vec::new();
    if tl.has_bar(|k| matches!(k, BarKind::Work { .. })) {
        items.push(("work", t("handler work", "xử lý")));
    }
    if tl.has_bar(|k| matches!(k, BarKind::Lock)) {
        items.push(("lock", t("lock held", "giữ lock")));
    }
    if tl.has_bar(|k| matches!(k, BarKind::LockExpired)) {
        items.push(("lock-expired", t("lock already expired", "lock đã hết hạn")));
    }
    if tl.has_bar(|k| matches!(k, BarKind::Wait)) {
        items.push(("wait", t("waiting", "chờ")));
    }
    items
}

/// The marks present, as (glyph, label).
fn glyph_keys(tl: &Timeline, lang: Lang) -> Vec<(Glyph, &'static str)> {
    let t = |en, vi| pick(lang, en, vi);
    let glyphs: [(Glyph, &'static str); 9] = [
        (Glyph::Received, t("received", "nhận")),
        (Glyph::Published, t("publish OK", "publish OK")),
        (Glyph::Failed, t("publish failed", "publish lỗi")),
        (Glyph::Wrote, t("wrote", "ghi")),
        (Glyph::Stale, t("stale, skipped", "bản cũ, bỏ qua")),
        (Glyph::Overwrote, t("overwrote a newer state", "đè lên trạng thái mới hơn")),
        (Glyph::Crash, t("crash", "crash")),
        (Glyph::SqlSent, t("SQL sent / done", "SQL gửi / xong")),
        (Glyph::Outbox, t("outbox round", "vòng outbox")),
    ];
    glyphs
        .into_iter()
        .filter(|(g, _)| match g {
            Glyph::SqlSent => tl.has(Glyph::SqlSent) || tl.has(Glyph::SqlDone) || tl.has(Glyph::SqlError),
            Glyph::Outbox => tl.has(Glyph::Outbox) || tl.has(Glyph::OutboxFailed),
            g => tl.has(*g),
        })
        .collect()
}

/// A key to the marks present in this run, wrapped within `[MARGIN, max_x]`; returns its bottom.
pub fn legend(out: &mut String, tl: &Timeline, y0: f64, max_x: f64, lang: Lang) -> f64 {
    let (mut lx, mut ly) = (MARGIN, y0);
    let mut advance = |w: f64| {
        if lx + w > max_x && lx > MARGIN {
            lx = MARGIN;
            ly += 26.0;
        }
        let at = (lx, ly);
        lx += w + 22.0;
        at
    };
    let _ = writeln!(out, r#"<g class="legend" font-size="14" fill="{MUTED}">"#);
    for (kind, label) in bar_keys(tl, lang) {
        let (bx, by) = advance(36.0 + text_width(label, 14.0));
        let _ = match kind {
            "work" => writeln!(
                out,
                r#"<rect x="{bx:.1}" y="{:.1}" width="28" height="14" rx="2" fill="{WORK}" fill-opacity="0.85"/>"#,
                by - 12.0
            ),
            "lock" => writeln!(
                out,
                r#"<rect x="{bx:.1}" y="{:.1}" width="28" height="{LOCK_H}" fill="url(#hatch)" stroke="{LOCK}" stroke-width="1.5"/>"#,
                by - 9.0
            ),
            "lock-expired" => writeln!(
                out,
                r#"<rect x="{bx:.1}" y="{:.1}" width="28" height="{LOCK_H}" fill="none" stroke="{RED}" stroke-width="1.5" stroke-dasharray="5 3"/>"#,
                by - 9.0
            ),
            _ => writeln!(
                out,
                r##"<rect x="{bx:.1}" y="{:.1}" width="28" height="8" fill="#eadcf3" stroke="{SQL}" stroke-width="1" stroke-dasharray="2 2"/>"##,
                by - 9.0
            ),
        };
        let _ = writeln!(out, r#"<text x="{:.1}" y="{by:.1}">{}</text>"#, bx + 36.0, esc(label));
    }
    for (g, label) in glyph_keys(tl, lang) {
        let (gx, gy) = advance(22.0 + text_width(label, 14.0));
        let _ = writeln!(out, "{}", glyph(g, gx + 8.0, gy - 5.0));
        let _ = writeln!(out, r#"<text x="{:.1}" y="{gy:.1}">{}</text>"#, gx + 22.0, esc(label));
    }
    let _ = writeln!(out, "</g>");
    ly + 8.0
}

/// The final state in one line: every item, or for many only the wrong ones.
fn final_text(r: &RunRecord, items: &[FinalItem], lang: Lang) -> String {
    let t = |en, vi| pick(lang, en, vi);
    let mut text = if items.is_empty() {
        format!("{}: {}", t("final", "cuối"), t("no row", "không có dòng nào"))
    } else if items.len() > 3 {
        // More than three do not fit beside the badge: name only the wrong ones.
        let wrong: Vec<String> =
            items.iter().filter(|i| i.is_wrong()).map(|i| format!("{} = {}", i.subject, i.value)).collect();
        let (n, k, list) = (items.len(), wrong.len(), wrong.join(", "));
        match wrong.is_empty() {
            true => crate::tr!(lang, "final: all {n} orders right", "cuối: cả {n} đơn đúng"),
            false => crate::tr!(lang, "final: {k} of {n} wrong ({list})", "cuối: {k} trên {n} đơn sai ({list})"),
        }
    } else {
        let shown: Vec<String> = items
            .iter()
            .map(|i| match &i.should_be {
                Some(want) => format!("{} = {} ({} {want})", i.subject, i.value, t("should be", "đúng ra là")),
                None => format!("{} = {}", i.subject, i.value),
            })
            .collect();
        format!("{}: {}", t("final", "cuối"), shown.join(", "))
    };
    // An unknown run says why (the process that died, the limit that ran out), never only
    // that time ran out.
    match (r.verdict.verdict, r.verdict.reasons.first()) {
        (Verdict::Unknown, Some(why)) => {
            let _ = write!(text, " · {}", shortened(why, 90));
        }
        _ if r.timed_out => {
            let _ = write!(text, " · {}", t("timed out", "hết giờ"));
        }
        _ => {}
    }
    text
}

/// `text` in at most `max` characters, cut between words with `…`.
fn shortened(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out = String::new();
    for word in text.split_whitespace() {
        if out.chars().count() + word.chars().count() + 1 > max - 1 {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out.push('…');
    out
}

/// The final state and the verdict badge, right-aligned; returns their left edge and bottom.
pub fn final_state(out: &mut String, r: &RunRecord, items: &[FinalItem], y0: f64, lang: Lang) -> (f64, f64) {
    let text = final_text(r, items, lang);
    let (badge, color, class) = match r.verdict.verdict {
        Verdict::Wrong => (pick(lang, "✕ WRONG", "✕ SAI"), RED, "wrong"),
        Verdict::Right => (pick(lang, "✓ RIGHT", "✓ ĐÚNG"), GREEN, "right"),
        Verdict::Unknown => (pick(lang, "? UNKNOWN", "? CHƯA RÕ"), GREY, "unknown"),
    };
    let badge_w = text_width(badge, 20.0) + 28.0;
    let bx = WIDTH - MARGIN - badge_w;
    // A final state too long for the room left of the badge names its wrong items only, with
    // no "should be" (the text report has them), and no reason after it.
    let text = if text_width(&text, 18.0) > bx - 14.0 {
        let wrong: Vec<String> =
            items.iter().filter(|i| i.is_wrong()).map(|i| format!("{} = {}", i.subject, i.value)).collect();
        format!("{}: {}", pick(lang, "final, wrong", "cuối, sai"), wrong.join(", "))
    } else {
        text
    };
    let _ = writeln!(
        out,
        r#"<text class="final" x="{:.1}" y="{y0:.1}" font-size="18" fill="{INK}" text-anchor="end">{}</text>"#,
        bx - 14.0,
        esc(&text)
    );
    let _ = writeln!(
        out,
        r#"<g class="badge {class}"><rect x="{bx:.1}" y="{:.1}" width="{badge_w:.1}" height="34" rx="17" fill="{color}"/><text x="{:.1}" y="{:.1}" font-size="20" font-weight="bold" fill="white" text-anchor="middle">{}</text></g>"#,
        y0 - 24.0,
        bx + badge_w / 2.0,
        y0 - 0.5,
        esc(badge)
    );
    (bx - 14.0 - text_width(&text, 18.0), y0 + 12.0)
}

/// Why the run was judged as it was, under the badge: the checker's first reasons (in
/// Vietnamese where their shape is known), wrapped on at most two lines; nothing for a right
/// run. Returns its bottom (`y` when there is nothing to say).
pub fn why(out: &mut String, r: &RunRecord, y: f64, lang: Lang) -> f64 {
    let reasons: Vec<String> = r.verdict.reasons.iter().map(|x| crate::report::reasons::in_lang(x, lang)).collect();
    if reasons.is_empty() || r.verdict.verdict == Verdict::Right {
        return y;
    }
    let mut text = reasons.iter().take(2).cloned().collect::<Vec<_>>().join("; ");
    if reasons.len() > 2 {
        text.push_str(&crate::tr!(lang, " (+{} more)", " (+{} lý do nữa)", reasons.len() - 2));
    }
    let head = pick(lang, "why: ", "vì: ");
    let lines = wrap(&format!("{head}{text}"), WIDTH - 2.0 * MARGIN, 16.0);
    let shown = lines.len().min(2);
    let color = if r.verdict.verdict == Verdict::Wrong { RED } else { GREY };
    let mut ly = y;
    for (i, line) in lines.iter().take(shown).enumerate() {
        ly += 21.0;
        // A second line that does not hold the rest ends on its last whole word and ` …`.
        let line = if i == 1 && lines.len() > 2 { format!("{line} …") } else { line.clone() };
        let _ = writeln!(
            out,
            r#"<text class="why" x="{MARGIN}" y="{ly:.1}" font-size="16" fill="{color}">{}</text>"#,
            esc(&line)
        );
    }
    ly + 5.0
}
