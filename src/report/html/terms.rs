//! The summary's strategy and seed-figure cells in Vietnamese. A kind names its approach in
//! English (SUMMARY.md is English) and a seed's figure is quoted as its scenario gives it; the
//! lab book words their phrases here, longest first, and keeps what is a name as it is
//! (commands, loops, file paths, numbers).

/// (English phrase, Vietnamese), the longer of two overlapping phrases first.
const PHRASES: &[(&str, &str)] = &[
    (
        "paid/2 in all three cases (B waits ~0.7 s: UPDATE 0, UPDATE 1, serialization error)",
        "paid/2 trong cả ba trường hợp (B chờ ~0,7 s: UPDATE 0, UPDATE 1, lỗi serialization)",
    ),
    ("both paid; #42 delayed ~420 ms, #43 not blocked", "cả hai paid; #42 chậm ~420 ms, #43 không bị chặn"),
    ("(the stale created gets UPDATE 0)", "(created cũ nhận UPDATE 0)"),
    ("the late release returns 0", "lần nhả lock muộn trả về 0"),
    ("status paid, 0 outbox rows", "trạng thái paid, 0 dòng outbox"),
    ("#42 created (wrong)", "#42 created (sai)"),
    ("(varies)", "(thay đổi)"),
    ("handlers that only parse the job", "handler chỉ parse job"),
    ("fan-out (S3: one reader, 4 workers)", "fan-out (S3: một reader, 4 worker)"),
    ("fan-out reader ceiling (S3)", "trần của reader fan-out (S3)"),
    ("wrapper keeping its key on failure", "wrapper giữ key khi lỗi"),
    ("lease + partner idempotency key", "lease + idempotency key của đối tác"),
    ("idempotent (processed table)", "idempotent (bảng processed)"),
    ("BRPOPLPUSH + processing list", "BRPOPLPUSH + list đang xử lý"),
    ("unique row ON CONFLICT", "dòng unique ON CONFLICT"),
    ("lease, done after the effect", "lease, xong sau hiệu ứng"),
    ("state events, keep newest", "sự kiện trạng thái, giữ bản mới nhất"),
    ("delta events, as they come", "sự kiện delta, theo thứ tự đến"),
    ("delta events + CAS skip", "sự kiện delta + CAS bỏ qua"),
    ("one transaction, rolled back", "một transaction, bị rollback"),
    ("seed production worker", "worker production của bài gốc"),
    ("idempotent wrapper", "wrapper idempotent"),
    ("CAS (business version)", "CAS (version nghiệp vụ)"),
    ("early return removed", "bỏ return sớm"),
    ("one key for two steps", "một key cho hai bước"),
    ("hash tags per master", "hash tag theo master"),
    ("naive hash tags", "hash tag ngây thơ"),
    ("naive dispatcher", "dispatcher ngây thơ"),
    ("per-key dispatcher", "dispatcher theo key"),
    ("multi-step job", "job nhiều bước"),
    ("multi-step", "nhiều bước"),
    ("corrected worker", "worker đã sửa"),
    ("corrected", "đã sửa"),
    ("conditional upsert", "upsert có điều kiện"),
    ("a key per job", "một key mỗi job"),
    ("no protection", "không bảo vệ"),
    ("SET NX claim", "giành quyền bằng SET NX"),
    ("check state", "kiểm tra trạng thái"),
    ("lease script", "script lease"),
    ("plain UPDATE", "UPDATE thường"),
    ("slot moved", "slot bị chuyển"),
    ("pre-work", "việc làm trước"),
    ("seed keys", "key của bài gốc"),
    ("one key", "một key"),
    ("per queue", "mỗi hàng đợi"),
    ("5 ms handlers", "handler 5 ms"),
    ("(seed)", "(bài gốc)"),
    ("wrong", "sai"),
    ("none", "không có"),
];

/// `text` with every phrase it holds in Vietnamese.
pub fn vi(text: &str) -> String {
    let mut out = text.to_string();
    for (en, vi) in PHRASES {
        if out.contains(en) {
            out = out.replace(en, vi);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::vi;

    #[test]
    fn phrases_are_worded_and_names_kept() {
        assert_eq!(vi("1 consumer, plain UPDATE"), "1 consumer, UPDATE thường");
        assert_eq!(vi("idempotent wrapper (seed)"), "wrapper idempotent (bài gốc)");
        assert_eq!(
            vi("wrong 10/10 (paid ~t=111 ms, created ~t=816 ms)"),
            "sai 10/10 (paid ~t=111 ms, created ~t=816 ms)"
        );
        assert_eq!(vi("python3 examples/python/consumer.py --lock"), "python3 examples/python/consumer.py --lock");
    }
}
