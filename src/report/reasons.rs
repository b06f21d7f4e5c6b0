//! A checker's reasons in the reader's language. Reasons are data a record keeps in English
//! (`order 42 ended created (v=1), expected paid`); the pictures and the lab book show them in
//! Vietnamese by their shape: each known shape is a pattern with its Vietnamese wording, the
//! figures, ids and names carried over as they are. A reason of a shape not listed here stays
//! in English (a test holds every reason in `results/records/` to a known shape).

use crate::lang::Lang;
use regex::Regex;
use std::sync::OnceLock;

/// (English shape, Vietnamese wording with `$name` for what the shape captures). Tried in
/// order; the first that matches the whole reason words it.
const SHAPES: &[(&str, &str)] = &[
    (
        r"order (?P<o>\d+) ended (?P<s>\S+), expected (?P<e>\S+): (?P<rest>.*)",
        "đơn $o kết thúc ở $s, đúng ra là $e: $rest",
    ),
    (
        r"(?P<a>\S+)'s transaction \(BEGIN at t=(?P<b>\d+) ms\) changed rows \((?P<w>.*)\) and was never committed: idle in transaction from t=(?P<i>\d+) ms until (?P<k>\S+) was killed at t=(?P<t>\d+) ms, then rolled back by PostgreSQL",
        "transaction của $a (BEGIN lúc t=$b ms) đã đổi dòng ($w) và không bao giờ commit: idle in transaction từ t=$i ms tới khi $k bị kill lúc t=$t ms, rồi PostgreSQL rollback",
    ),
    (
        r"(?P<a>\S+)'s transaction \(BEGIN at t=(?P<b>\d+) ms\) changed rows \((?P<w>.*)\) and was never committed: idle in transaction from t=(?P<i>\d+) ms until (?P<k>\S+) died at t=(?P<t>\d+) ms, then rolled back by PostgreSQL",
        "transaction của $a (BEGIN lúc t=$b ms) đã đổi dòng ($w) và không bao giờ commit: idle in transaction từ t=$i ms tới khi $k chết lúc t=$t ms, rồi PostgreSQL rollback",
    ),
    (
        r"(?P<a>\S+)'s transaction \(BEGIN at t=(?P<b>\d+) ms\) changed rows \((?P<w>.*)\) and was never committed: idle in transaction from t=(?P<i>\d+) ms until the run stopped (?P<k>\S+), then rolled back by PostgreSQL",
        "transaction của $a (BEGIN lúc t=$b ms) đã đổi dòng ($w) và không bao giờ commit: idle in transaction từ t=$i ms tới khi lần chạy dừng $k, rồi PostgreSQL rollback",
    ),
    (
        r"the lab's patience \((?P<p>[^)]*)\) ran out waiting for (?P<w>.*)",
        "lab hết kiên nhẫn ($p) khi còn chờ $w",
    ),
    (
        r"(?P<a>\S+)'s (?P<s>.+?) was still waiting after (?P<t>[\d.]+ s) for (?P<h>\S+)'s open transaction \((?P<st>.*?) since t=(?P<ms>\d+) ms\)",
        "$s của $a vẫn đang chờ sau $t vì transaction đang mở của $h ($st từ t=$ms ms)",
    ),
    (
        r"(?P<a>\S+)'s (?P<s>.+?) waited (?P<t>[\d.]+ s) for (?P<h>\S+)'s open transaction \((?P<st>.*?) since t=(?P<ms>\d+) ms\)",
        "$s của $a chờ $t vì transaction đang mở của $h ($st từ t=$ms ms)",
    ),
    (
        r"a critical job queued into an idle system was never served \((?P<a>\S+) died at t=(?P<t>\d+) ms, (?P<d>\d+) ms after it was queued\)",
        "một job critical vào hàng đợi lúc hệ thống rảnh không bao giờ được xử lý ($a chết lúc t=$t ms, $d ms sau khi vào hàng đợi)",
    ),
    (
        r"a critical job queued into an idle system was not served within the lab's patience \((?P<p>[^)]*)\)",
        "một job critical vào hàng đợi lúc hệ thống rảnh không được xử lý trong thời gian lab chờ ($p)",
    ),
    (
        r"mutual exclusion broken: (?P<a>\S+) took (?P<k>\S+) at t=(?P<t>\d+) ms while (?P<b>\S+) still held it",
        "loại trừ lẫn nhau bị phá: $a lấy $k lúc t=$t ms khi $b vẫn còn giữ",
    ),
    (
        r"order (?P<o>\d+) ended (?P<s>\S+) \(v=(?P<v>\d+)\), expected (?P<e>\S+)",
        "đơn $o kết thúc ở $s (v=$v), đúng ra là $e",
    ),
    (
        r"order (?P<o>\d+) ended at v=(?P<v>\d+) though v=(?P<w>\d+) had been written: a stale event re-applied over it",
        "đơn $o kết thúc ở v=$v dù v=$w đã được ghi: một sự kiện cũ được áp dụng lại đè lên",
    ),
    (
        r"order (?P<o>\d+) (?P<s>\S+) \(v=(?P<v>\d+)\) applied (?P<n>\d+) times \(entries (?P<ids>.*)\)",
        "đơn $o: $s (v=$v) được áp dụng $n lần (entry $ids)",
    ),
    (
        r"order (?P<o>\d+) document: missing (?P<i>.*); total (?P<t>\d+), expected (?P<e>\d+)",
        "tài liệu của đơn $o: thiếu $i; tổng $t, đúng ra là $e",
    ),
    (r"(?P<k>\d+) of (?P<n>\d+) jobs never took effect \((?P<l>.*)\)", "$k trên $n job không bao giờ có hiệu lực ($l)"),
    (r"with (?P<n>\d+) per queue: (?P<rest>.*)", "với $n mỗi hàng đợi: $rest"),
    (
        r"master (?P<m>\S+) served (?P<p>\d+) % of the queue commands \(fair share (?P<f>\d+) %\)",
        "master $m phục vụ $p % lệnh hàng đợi (phần công bằng $f %)",
    ),
    (
        r"(?P<n>\d+) orders had a step take effect after a later one \((?P<l>.*)\)",
        "$n đơn có một bước có hiệu lực sau bước đến sau nó ($l)",
    ),
    (
        r"(?P<k>\d+) of (?P<n>\d+) acknowledged jobs are gone \((?P<l>.*) … and (?P<m>\d+) more\)",
        "$k trên $n job đã được xác nhận biến mất ($l … và $m job nữa)",
    ),
    (
        r"(?P<k>\d+) of (?P<n>\d+) acknowledged jobs are gone \((?P<l>.*)\)",
        "$k trên $n job đã được xác nhận biến mất ($l)",
    ),
    (r"(?P<j>\S+) (?P<e>\S+) \((?P<w>[^)]*)\): lost", "$j $e ($w): bị mất"),
    (r"(?P<j>\S+) (?P<e>\S+) \((?P<w>[^)]*)\): applied (?P<n>\d+) times", "$j $e ($w): thực hiện $n lần"),
    (r"(?P<n>\d+) effects lost: (?P<l>.*?)(?:, … and (?P<m>\d+) more)?", "$n hiệu ứng bị mất: $l"),
    (r"(?P<n>\d+) effects duplicated: (?P<l>.*)", "$n hiệu ứng bị lặp: $l"),
    (r"(?P<j>\S+) (?P<e>\S+): (?P<n>\d+) fewer than wanted \(lost\)", "$j $e: ít hơn mong muốn $n lần (bị mất)"),
    (
        r"(?P<a>\S+) was done before (?P<b>\S+), which was pushed first \(done in order: (?P<l>.*)\)",
        "$a xong trước $b, dù $b được đẩy vào trước (thứ tự xong: $l)",
    ),
    (
        r"low starved under light critical traffic: a low job waited (?P<ms>\d+) ms",
        "low bị bỏ đói khi critical đến thưa: một job low chờ $ms ms",
    ),
    (
        r"low starved under the flood: a low job waited (?P<ms>\d+) ms",
        "low bị bỏ đói khi bị dồn dập: một job low chờ $ms ms",
    ),
    (
        r"low starved: (?P<ms>\d+) ms without a low job served while low jobs waited",
        "low bị bỏ đói: $ms ms không job low nào được phục vụ dù có job low đang chờ",
    ),
    (
        r"a critical job queued into an idle system waited (?P<ms>\d+) ms",
        "một job critical xếp vào lúc hệ thống rảnh phải chờ $ms ms",
    ),
    (r"a job queued into the idle set waited (?P<ms>\d+) ms", "một job xếp vào tập đang rảnh phải chờ $ms ms"),
    (
        r"critical jobs under light traffic waited (?P<ms>\d+) ms \((?P<p>\d+)th percentile\)",
        "job critical khi tải nhẹ phải chờ $ms ms (phân vị $p)",
    ),
    (
        r"not strict: (?P<n>\d+) normal/low jobs served before the critical backlog was drained",
        "không nghiêm ngặt: $n job normal/low được phục vụ trước khi tồn đọng critical hết",
    ),
    (
        r"served (?P<s>\[.*\]) while all were backlogged: not (?P<w>\[.*\]) \(off by (?P<p>\d+) %\)",
        "đã phục vụ $s khi mọi hàng đều tồn đọng: không phải $w (lệch $p %)",
    ),
    (
        r"equal scores came out (?P<l>.*): not in the order queued \(reverse byte order of the members\)",
        "các điểm bằng nhau ra theo thứ tự $l: không theo thứ tự xếp hàng (thứ tự byte ngược của member)",
    ),
    (
        r"(?P<n>\d+) job\(s\) lost: popped, never done, no longer in the set",
        "$n job bị mất: đã lấy ra, không bao giờ xong, không còn trong tập",
    ),
    (r"the idle worker sent (?P<n>\d+) commands per second", "worker đang rảnh gửi $n lệnh mỗi giây"),
    (r"the run timed out before every entry was acknowledged", "lần chạy hết giờ trước khi mọi entry được xác nhận"),
    (r"(?P<a>\S+) died unplanned: (?P<d>.*)", "$a chết ngoài kế hoạch: $d"),
];

fn shapes() -> &'static [(Regex, &'static str)] {
    static SHAPES_RE: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    SHAPES_RE.get_or_init(|| {
        SHAPES.iter().map(|(en, vi)| (Regex::new(&format!("^(?:{en})$")).expect("a valid shape"), *vi)).collect()
    })
}

/// `reason` in `lang`: as it is in English; in Vietnamese by its shape (as it is when its
/// shape is not known).
pub fn in_lang(reason: &str, lang: Lang) -> String {
    match lang {
        Lang::En => reason.to_string(),
        Lang::Vi => vi(reason).unwrap_or_else(|| reason.to_string()),
    }
}

/// The Vietnamese of a reason of a known shape.
pub fn vi(reason: &str) -> Option<String> {
    let (re, wording) = shapes().iter().find(|(re, _)| re.is_match(reason))?;
    let caps = re.captures(reason)?;
    let mut out = String::new();
    caps.expand(wording, &mut out);
    // The optional "… and N more" of a list.
    if let (Some(m), false) = (caps.name("m"), wording.contains("$m")) {
        out.push_str(&format!(", … và {} nữa", m.as_str()));
    }
    // A reason inside a reason (`with 3 per queue: …`) is worded too.
    Some(match caps.name("rest") {
        Some(rest) => out.replace(rest.as_str(), &rest_vi(rest.as_str())),
        None => out,
    })
}

/// A reason inside a reason in Vietnamese: one reason, or several joined by `; ` (each part
/// that has a shape of its own is worded; a part that does not is kept with the one before it,
/// as a list inside a reason may hold `; ` too).
fn rest_vi(rest: &str) -> String {
    if let Some(whole) = vi(rest) {
        return whole;
    }
    let mut parts: Vec<String> = Vec::new();
    for piece in rest.split("; ") {
        match parts.last_mut() {
            Some(last) if vi(piece).is_none() && vi(&format!("{last}; {piece}")).is_some() => {
                last.push_str("; ");
                last.push_str(piece);
            }
            Some(last) if vi(last).is_none() => {
                last.push_str("; ");
                last.push_str(piece);
            }
            _ => parts.push(piece.to_string()),
        }
    }
    parts.iter().map(|p| in_lang(p, Lang::Vi)).collect::<Vec<_>>().join("; ")
}

/// The text report's outcome lines in Vietnamese: its `why (run N): …` lines hold reasons in
/// English (the record keeps them so); each reason of a known shape is worded in Vietnamese.
pub fn outcome_lines_vi(lines: &str) -> String {
    lines
        .lines()
        .map(|line| match line.split_once("): ") {
            Some((head, reasons))
                if head.trim_start().starts_with("vì sao (") || head.trim_start().starts_with("why (") =>
            {
                let worded: Vec<String> = reasons.split("; ").map(|r| in_lang(r, Lang::Vi)).collect();
                format!("{head}): {}", worded.join("; "))
            }
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_shapes_are_worded_in_vietnamese() {
        assert_eq!(
            vi("order 42 ended created (v=1), expected paid").as_deref(),
            Some("đơn 42 kết thúc ở created (v=1), đúng ra là paid")
        );
        assert_eq!(
            vi("8 effects lost: n-0382 (dead letter), n-0399 email, … and 3 more").as_deref(),
            Some("8 hiệu ứng bị mất: n-0382 (dead letter), n-0399 email, … và 3 nữa")
        );
        assert_eq!(
            vi("with 1 per queue: master A served 0 % of the queue commands (fair share 33 %)").as_deref(),
            Some("với 1 mỗi hàng đợi: master A phục vụ 0 % lệnh hàng đợi (phần công bằng 33 %)")
        );
        assert_eq!(vi("something new"), None);
        assert_eq!(in_lang("something new", Lang::Vi), "something new");
        assert_eq!(in_lang("order 1 ended x (v=1), expected y", Lang::En), "order 1 ended x (v=1), expected y");
    }

    /// Every reason a saved record holds has a known shape: the lab book and the pictures show
    /// none of them in English on a Vietnamese page.
    #[test]
    fn every_reason_in_results_is_worded_in_vietnamese() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
        let mut unknown = Vec::new();
        let mut seen = 0;
        for report in crate::report::record::load_all(&dir).expect("results/records/") {
            let report = report.expect("every record reads");
            for v in &report.variants {
                for r in &v.run_records {
                    for reason in &r.verdict.reasons {
                        seen += 1;
                        if vi(reason).is_none() {
                            unknown.push(format!("{}/{}: {reason}", report.lab.id, v.id));
                        }
                    }
                }
            }
        }
        assert!(seen > 50, "only {seen} reasons");
        assert!(unknown.is_empty(), "reasons of no known shape:\n{}", unknown.join("\n"));
    }
}
